# Sourced by the load scripts: their common options and the release binary they run.

# load_options SCRIPT HELP_LAST_LINE "$@": reads --duration SECONDS (10), --connections N
# (32) and, when the caller has set `rounds`, --rounds N, into those variables; --help prints
# the script's header comment (lines 2 to HELP_LAST_LINE) and exits.
load_options() {
  local script="$1" help_last="$2"
  shift 2
  duration=10
  connections=32
  while [ $# -gt 0 ]; do
    case "$1" in
      --duration) duration="${2:?--duration needs a number of seconds}"; shift 2 ;;
      --connections) connections="${2:?--connections needs a number}"; shift 2 ;;
      --rounds)
        [ -n "${rounds:-}" ] || { echo "$script: unknown argument $1 (try --help)" >&2; exit 2; }
        rounds="${2:?--rounds needs a number}"; shift 2 ;;
      -h|--help) sed -n "2,${help_last}p" "scripts/$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
      *) echo "$script: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
  done
  case "$duration$connections${rounds:-}" in
    *[!0-9]*) echo "$script: the options take whole numbers" >&2; exit 2 ;;
  esac
}

# release_binary SCRIPT PACKAGE BINARY: builds PACKAGE in release mode and prints the path of
# BINARY.
release_binary() {
  echo "$1: building the release $3" >&2
  cargo build --release --quiet -p "$2"
  local target_dir
  target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  echo "$target_dir/release/$3"
}
