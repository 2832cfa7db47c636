# Sourced by the shell tests that read a recording with producer_check (an
# ATF v2 reader written apart from src/atf). A compact index (ATC1, the
# default --index-format) is read through its `ada export --format atf`
# copy; ATF v2 files (--index-format atf) as they are.
#   check_atf ADA CHECK SRC SCRATCH ARGS...   runs CHECK on SRC or its copy
#                                            (SCRATCH: a directory it may
#                                            replace); CHECK's exit status

# Whether an index file under $1 starts with the compact magic.
has_compact_index() {
	for f in $(find "$1" -name 'index*.atf' 2>/dev/null); do
		[ "$(head -c 4 "$f")" = ATC1 ] && return 0
	done
	return 1
}

check_atf() {
	_ada=$1 _check=$2 _src=$3 _copy=$4
	shift 4
	if has_compact_index "$_src"; then
		rm -rf "$_copy"
		"$_ada" export --format atf -o "$_copy" "$_src" >/dev/null || {
			echo "check_atf: ada export --format atf $_src failed" >&2
			return 1
		}
		has_compact_index "$_copy" && { echo "check_atf: the ATF v2 copy of $_src is still compact" >&2; return 1; }
		"$_check" "$_copy" "$@"
	else
		"$_check" "$_src" "$@"
	fi
}
