"""A human-readable Markdown report from a HIL run's JUnit XML."""

from __future__ import annotations

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
    lines = ["# robohal HIL report", ""]
    for target, cases in sorted(by_target.items()):
        counts = defaultdict(int)
        for _, outcome, _ in cases:
            counts[outcome] += 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        lines += [f"## {target}", "", summary, "", "| test | outcome | detail |", "|---|---|---|"]
        lines += [f"| `{name}` | {outcome} | {detail.replace('|', '/')} |" for name, outcome, detail in cases]
        lines.append("")
    path = Path(folder) / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
