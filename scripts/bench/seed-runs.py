"""Seed a Dyno database with many stored runs, for the app's Results view
benchmark: the real runs of tests/fixtures/sweep-export.json (a real sweep of
SmolLM2 on this kind of machine) copied N times with distinct run ids and
start times, then stored through `dyno import` like any shared result.

Usage: python3 scripts/bench/seed-runs.py DYNO_BINARY DB N [MACHINE]

MACHINE, when given, becomes the runs' machine (fingerprint and CPU name),
as another machine's runs would arrive; its runs start at moments of their
own, so machines never share a start time.
"""
import copy
import json
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

dyno, db, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
machine = sys.argv[4] if len(sys.argv) > 4 else None
doc = json.loads((Path(__file__).resolve().parents[2] / "tests/fixtures/sweep-export.json").read_text())
doc.pop("sweep", None)
doc.pop("sweep_id", None)
base = doc["runs"]
start = datetime(2026, 1, 1, tzinfo=timezone.utc)
if machine:
    doc["machine"]["fingerprint"] = machine
    doc["machine"]["cpu"] = f"CPU of {machine}"
    start += timedelta(seconds=sum(machine.encode()) * 7)
runs = []
for i in range(n):
    r = copy.deepcopy(base[i % len(base)])
    r["run_id"] = i + 1
    r["sweep_id"] = None
    r["started_at"] = (start + timedelta(minutes=i)).isoformat().replace("+00:00", "Z")
    runs.append(r)
doc["runs"] = runs
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump(doc, f)
subprocess.run([dyno, "--db", db, "import", f.name], check=True)
Path(f.name).unlink()
