#!/bin/sh
# build_checkers.sh NEEDS_GPU CMAKE BUILD_DIR: builds the exercises' checker programs in BUILD_DIR
# (target workbook_exercise_checkers) where NEEDS_GPU (the build's workbook_needs_gpu) finds a GPU;
# where it finds none, exits with its code (77: skipped, as the checkers' own tests are).
"$1" >/dev/null || exit $?
exec "$2" --build "$3" --target workbook_exercise_checkers
