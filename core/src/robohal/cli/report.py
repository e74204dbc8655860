"""A human-readable Markdown report from a HIL run's JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def write_markdown_report(junit_path: str, folder: str) -> Path:
    tree = ET.parse(junit_path)
    by_target: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for case in tree.iter("testcase"):
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
    lines = ["# robohal HIL report", ""]
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
