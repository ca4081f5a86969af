"""`make appworld-data` without internet: one line naming the error and the log, exit 2 (not AppWorld's
500-line traceback). AppWorld's CLI is replaced by a stand-in, so nothing is downloaded."""

from __future__ import annotations

import subprocess

from conftest import HUNG_S, REPO

OFFLINE = """#!/bin/sh
i=0; while [ $i -lt 500 ]; do echo "| traceback frame $i |"; i=$((i+1)); done
echo "ConnectionError: HTTPSConnectionPool(host='s3.example', port=443): Max retries exceeded (Caused by"
echo "NameResolutionError(\\"Failed to resolve 's3.example'\\"))"
exit 1
"""
ONLINE = """#!/bin/sh
mkdir -p "$APPWORLD_ROOT/data/tasks" && echo downloaded
"""


def make_appworld_data(tmp_path, cli_text: str) -> subprocess.CompletedProcess:
    cli = tmp_path / "appworld"
    cli.write_text(cli_text)
    cli.chmod(0o755)
    work = tmp_path / "clone"
    work.mkdir()
    # -C: the .cache it writes is the temporary folder's; -o setup: the venvs are not rebuilt
    return subprocess.run(["make", "-s", "-C", str(work), "-f", str(REPO / "Makefile"), "-o", "setup",
                           "appworld-data", f"APPWORLD_CLI={cli}"], capture_output=True, text=True, timeout=HUNG_S)


def test_offline_download_is_one_line_with_the_cause_and_the_log(tmp_path):
    proc = make_appworld_data(tmp_path, OFFLINE)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    failed = [line for line in proc.stderr.splitlines() if line.startswith("appworld-data:")]
    assert failed == ["appworld-data: download failed (no internet?): NameResolutionError(\"Failed to resolve "
                      "'s3.example'\")) -- full output: .cache/appworld/download.log"]
    assert "traceback frame" not in proc.stdout + proc.stderr
    log = tmp_path / "clone" / ".cache" / "appworld" / "download.log"
    assert "traceback frame 499" in log.read_text()


def test_successful_download_exits_0(tmp_path):
    proc = make_appworld_data(tmp_path, ONLINE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "clone" / ".cache" / "appworld" / "root" / "data" / "tasks").is_dir()
