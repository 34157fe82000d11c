#!/usr/bin/env bash
# meson.build's shared precompiled header for the project's trials: compiles the header into GCH,
# then rewrites STAMP, a header each trial also includes (after the precompiled one). g++ writes no
# header of a precompiled one into a program's depfile, so without the stamp an edit of a dtl
# header rebuilt the .gch but none of the objects compiled from it (stale objects, link errors).
# Usage: build_pch.sh GCH STAMP DEPFILE HEADER CXX [flags...]
set -eu
gch=$1 stamp=$2 depfile=$3 header=$4
shift 4
"$@" -MD -MF "$depfile" -MT "$gch" -x c++-header "$header" -o "$gch"
printf '// dtl: rewritten with %s, so that what is compiled from it depends on it\n' "$(basename "$gch")" >"$stamp"
