#!/usr/bin/env bash
# pack_out.sh DIR [MAX]: the device tool brings back at most 8 files from $OUT; when DIR
# holds more than MAX (default 8) files, pack every file but tests-failures.txt into
# DIR/logs.tgz (tools/device_check.sh calls it last; ecosystem runs can too).
dir=${1:?usage: pack_out.sh DIR [MAX]}
max=${2:-8}
n=$(find "$dir" -maxdepth 1 -type f | wc -l)
(( n <= max )) && exit 0
files=()
while IFS= read -r f; do
    [[ "$f" == tests-failures.txt || "$f" == logs.tgz ]] || files+=("$f")
done < <(cd "$dir" && find . -maxdepth 1 -type f -printf '%f\n' | sort)
tar -czf "$dir/logs.tgz.part" -C "$dir" "${files[@]}" || exit 1
(cd "$dir" && rm -f -- "${files[@]}")
mv "$dir/logs.tgz.part" "$dir/logs.tgz"
echo "(more than $max files in $dir: the logs are packed into logs.tgz)"
