#!/bin/sh
# expect_one_line.sh CODE PREFIX COMMAND...: passes when COMMAND exits with CODE and prints exactly
# one line (stdout and stderr together), which begins with PREFIX. The workbook's contract for a
# usage error (2, "error: ...") and for a missing package (1, "error: this script needs ...").
code=$1
prefix=$2
shift 2
output=$("$@" 2>&1)
status=$?
lines=$(printf '%s\n' "$output" | wc -l)
printf '%s\n' "$output"
if [ "$status" -ne "$code" ]; then echo "expected exit code $code, got $status"; exit 1; fi
if [ "$lines" -ne 1 ]; then echo "expected one line, got $lines"; exit 1; fi
case $output in "$prefix"*) ;; *) echo "expected the line to begin with '$prefix'"; exit 1 ;; esac
