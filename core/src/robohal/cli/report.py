"""Human-readable Markdown reports from HIL runs' JUnit XML: one target's run, or a lab's run
over cells merged into one (with a history line per cell)."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

# The test id robohal's pytest plugin gives a family's test when no target is of its family's
# scheme (robohal.testing.plugin): such a test was never meant to run here.
NO_TARGET_ID = "[no-target]"


def write_markdown_report(junit_path: str, folder: str) -> Path:
    """``report.md`` in ``folder`` from one run's JUnit XML: first one line for the tests of robot
    families no target was given for, then per target a summary line, every test and the
    motions with their plots."""
    tree = ET.parse(junit_path)
    by_target: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    not_run: dict[str, int] = defaultdict(int)  # per suite: its tests that had no target of their family
    for case in tree.iter("testcase"):
        if case.get("name", "").endswith(NO_TARGET_ID) and case.find("skipped") is not None:
            not_run[suite_of(case.get("classname", ""))] += 1
            continue
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        target = "(no target)"
        for prop in case.iter("property"):
            if prop.get("name") == "hil_target":
                target = prop.get("value", target)
        outcome, detail = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "FAILED", "error": "ERROR", "skipped": "skipped"}[tag]
                detail = (node.get("message") or "").splitlines()[0][:160] if node.get("message") else ""
        by_target[target].append((name, outcome, detail))
    motions_path = Path(folder) / "motions.json"
    motions = json.loads(motions_path.read_text()) if motions_path.exists() else []
    lines = ["# robohal HIL report", "", *([not_run_line(not_run), ""] if not_run else [])]
    for target, cases in sorted(by_target.items()):
        counts = defaultdict(int)
        for _, outcome, _ in cases:
            counts[outcome] += 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        lines += [f"## {target}", "", summary, "", "| test | outcome | detail |", "|---|---|---|"]
        lines += [f"| `{name}` | {outcome} | {detail.replace('|', '/')} |" for name, outcome, detail in cases]
        lines.append("")
        for motion in (m for m in motions if (m["target"] or "(no target)") == target):
            error_deg = motion["max_tracking_error_rad"] * 57.29577951308232
            lines.append(f"**{motion['motion']}** ({motion['test']}): {motion['cycles']} cycles,"
                         f" {motion['duration_s']:.2f} s, max tracking error {error_deg:.3f} deg")
            if motion["plot"]:
                lines += ["", f"![{motion['motion']}]({motion['plot']})"]
            lines.append("")
    path = Path(folder) / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def not_run_line(not_run: dict[str, int]) -> str:
    """One line for the suites of robot families that had no target in the run, with their counts."""
    suites = ", ".join(f"`{suite}` {count}" for suite, count in sorted(not_run.items()))
    return f"Not run, no target of their robot family: {sum(not_run.values())} tests ({suites})."


# A lab run: one folder per cell, merged --------------------------------------------------------

OUTCOME_TAGS = {"failure": "failed", "error": "errors", "skipped": "skipped"}


def suite_of(classname: str, suites=()) -> str:
    """The suite a JUnit test case belongs to: the first of ``suites`` (packages, folders) its
    class name lies in, else its class name up to the test module."""
    for suite in suites:
        dotted = suite.replace("/", ".").strip(".")
        if f".{classname}.".find(f".{dotted}.") >= 0:
            return suite
    parts = classname.split(".")
    for n, part in enumerate(parts):
        if part.startswith("test_"):
            return ".".join(parts[:n]) or part
    return classname


def outcome_of(case: ET.Element) -> str:
    for tag, outcome in OUTCOME_TAGS.items():
        if case.find(tag) is not None:
            return outcome
    return "passed"


def merge_junit(folder: Path, runs) -> Path:
    """One JUnit file for the run: each cell's test suite, named after the cell, with a
    ``hil_cell`` property on the suite and on each test case (``hil_target`` stays)."""
    merged = ET.Element("testsuites", name="robohal hil")
    totals = defaultdict(float)
    for run in runs:
        junit = run.folder / "junit.xml"
        if not junit.exists():
            continue
        for suite in ET.parse(junit).getroot().iter("testsuite"):
            suite.set("name", run.cell.name)
            properties = suite.find("properties")
            if properties is None:
                properties = ET.Element("properties")
                suite.insert(0, properties)
            ET.SubElement(properties, "property", name="hil_cell", value=run.cell.name)
            ET.SubElement(properties, "property", name="hil_identity", value=run_identity(run))
            for case in suite.iter("testcase"):
                props = case.find("properties")
                if props is None:
                    props = ET.SubElement(case, "properties")
                ET.SubElement(props, "property", name="hil_cell", value=run.cell.name)
            for key in ("tests", "failures", "errors", "skipped", "time"):
                totals[key] += float(suite.get(key, 0) or 0)
            merged.append(suite)
    for key, value in totals.items():
        merged.set(key, f"{value:.3f}" if key == "time" else str(int(value)))
    path = folder / "junit.xml"
    ET.ElementTree(merged).write(path, encoding="utf-8", xml_declaration=True)
    return path


def run_identity(run) -> str:
    """What the cell's robot said it is (the simulators say so too), from its ``targets.json``."""
    path = run.folder / "targets.json"
    if not path.exists():
        return ""
    targets = json.loads(path.read_text(encoding="utf-8"))
    return "; ".join(entry.get("identity") or "" for entry in targets.values())


def cell_figures(run) -> dict:
    """Counts, per-suite counts and durations, and the motions of one cell's run."""
    counts: dict[str, int] = defaultdict(int)
    suites: dict[str, dict] = {}
    cases = []
    junit = run.folder / "junit.xml"
    if junit.exists():
        for case in ET.parse(junit).iter("testcase"):
            outcome = outcome_of(case)
            suite = suite_of(case.get("classname", ""), run.cell.suites)
            entry = suites.setdefault(suite, {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "seconds": 0.0})
            entry[outcome] += 1
            entry["seconds"] += float(case.get("time", 0) or 0)
            counts[outcome] += 1
            node = next((case.find(tag) for tag in OUTCOME_TAGS if case.find(tag) is not None), None)
            detail = (node.get("message") or "").splitlines()[0][:160] if node is not None and node.get("message") else ""
            cases.append((f"{case.get('classname', '')}::{case.get('name', '')}", outcome, detail))
    motions_path = run.folder / "motions.json"
    motions = json.loads(motions_path.read_text(encoding="utf-8")) if motions_path.exists() else []
    worst = max((m["max_tracking_error_rad"] for m in motions), default=None)
    return {"counts": dict(counts), "suites": suites, "cases": cases, "motions": motions,
            "max_tracking_error_rad": worst, "identity": run_identity(run)}


def cell_outcome(run) -> str:
    if run.error:
        return f"NOT RUN ({run.error})"
    return "passed" if run.passed else f"FAILED (exit code {run.code})"


def write_lab_report(folder: Path, runs, *, wall: float, jobs: int, shard: str = "") -> Path:
    """``report.md`` (and a merged ``junit.xml`` and ``motions.json``) for a run over cells:
    a summary line per cell, then per cell its suites, tests and motions with their plots."""
    folder.mkdir(parents=True, exist_ok=True)
    merge_junit(folder, runs)
    figures = {run.cell.name: cell_figures(run) for run in runs}
    merged_motions = [{**motion, "cell": name, "plot": f"cells/{name}/{motion['plot']}" if motion["plot"] else None}
                      for name, figure in figures.items() for motion in figure["motions"]]
    (folder / "motions.json").write_text(json.dumps(merged_motions, indent=2), encoding="utf-8")
    lines = ["# robohal HIL report", "",
             f"{len(runs)} cell(s){f', shard {shard}' if shard else ''}, {jobs} at a time, {wall:.1f} s in all.", "",
             "| cell | outcome | passed | failed | errors | skipped | run s | waited s | max tracking error deg |",
             "|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        counts = figures[run.cell.name]["counts"]
        worst = figures[run.cell.name]["max_tracking_error_rad"]
        lines.append(f"| {run.cell.name} | {cell_outcome(run)} | {counts.get('passed', 0)} | {counts.get('failed', 0)}"
                     f" | {counts.get('errors', 0)} | {counts.get('skipped', 0)} | {run.seconds:.1f} | {run.waited:.1f}"
                     f" | {'-' if worst is None else f'{math.degrees(worst):.3f}'} |")
    lines.append("")
    for run in runs:
        figure = figures[run.cell.name]
        cell = run.cell
        safety = cell.safety
        lines += [f"## {cell.name}", "",
                  f"- robot: `{cell.uri}`" + (f" ({figure['identity']})" if figure["identity"] else ""),
                  f"- safety: speed factor {safety.speed:g}"
                  + (f", workspace box {safety.workspace}" if safety.workspace is not None else ", no workspace box"),
                  *( [f"- contact: {cell.contact}"] if cell.contact else []),
                  f"- outcome: {cell_outcome(run)}", "",
                  "| suite | passed | failed | errors | skipped | s |", "|---|---|---|---|---|---|"]
        for suite, entry in figure["suites"].items():
            lines.append(f"| `{suite}` | {entry['passed']} | {entry['failed']} | {entry['errors']} | {entry['skipped']}"
                         f" | {entry['seconds']:.1f} |")
        lines.append("")
        bad = [case for case in figure["cases"] if case[1] in ("failed", "errors")]
        if bad:
            lines += ["| test | outcome | detail |", "|---|---|---|"]
            lines += [f"| `{name}` | {outcome} | {detail.replace('|', '/')} |" for name, outcome, detail in bad]
            lines.append("")
        for motion in figure["motions"]:
            lines.append(f"**{motion['motion']}** ({motion['test']}): {motion['cycles']} cycles,"
                         f" {motion['duration_s']:.2f} s, max tracking error"
                         f" {math.degrees(motion['max_tracking_error_rad']):.3f} deg")
            if motion["plot"]:
                lines += ["", f"![{motion['motion']}](cells/{cell.name}/{motion['plot']})"]
            lines.append("")
    path = folder / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def append_history(path: str | Path, folder: Path, runs) -> None:
    """One JSON line per cell appended to ``path``: a lab sees a cell degrade over time."""
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with open(path, "a", encoding="utf-8") as history:
        for run in runs:
            figure = cell_figures(run)
            worst = figure["max_tracking_error_rad"]
            history.write(json.dumps({
                "time": stamp, "cell": run.cell.name, "uri": run.cell.uri, "identity": figure["identity"],
                "outcome": "passed" if run.passed else ("not run" if run.error else "failed"),
                **{key: figure["counts"].get(key, 0) for key in ("passed", "failed", "errors", "skipped")},
                "seconds": round(run.seconds, 2), "max_tracking_error_rad": worst,
            }) + "\n")
