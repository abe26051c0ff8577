#!/usr/bin/env sh
# Kept for muscle memory: everything is ./supersonic now.
exec "$(dirname "$0")/supersonic" "$@"
