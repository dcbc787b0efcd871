"""The README's main job, examples/quickstart.py, on a tiny budget: both agents, the table, the PNG."""

import re
import subprocess
import sys
from pathlib import Path

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


def test_quickstart_prints_both_agents_and_saves_the_learning_curves(tmp_path):
    out = tmp_path / "quickstart"
    arguments = ["--steps", "1500", "--eval-episodes", "2", "--out", str(out), "--no-progress"]
    result = subprocess.run(
        [sys.executable, str(QUICKSTART), *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    table = result.stdout.split("algorithm |")[1]
    assert "               DQN |" in table and "  ComplementaryDQN |" in table
    png = out / "learning_curves.png"
    assert f"Learning curves: {png}" in result.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The study figures it prints are the README's (the front page a user compares them with).
    quoted = re.findall(r"(\d+\.\d+)x", result.stdout.split("anecdote.")[1])
    readme = (QUICKSTART.parents[1] / "README.md").read_text()
    assert quoted and all(f"{ratio}×" in readme for ratio in quoted), quoted
