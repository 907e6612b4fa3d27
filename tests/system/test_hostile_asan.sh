#!/bin/bash
# The hostile-file cases of test_hostile_files.sh (hostile_cases.sh) recorded by stackscope's
# ASan+UBSan build: the same outcomes, and no sanitizer report.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hostile_cases.sh"
need_root

check_fixtures
setup_fixtures
cases "$ASAN_SS" asan

finish
