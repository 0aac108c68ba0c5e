# scripts/lib/usage.sh — the usage of every script under scripts/, kept in one place: its header
# comment (the `#` lines after the shebang). Each script sources this before it does anything:
#
#   source "$(dirname "$0")/lib/usage.sh" "$@"
#
# With -h or --help as the first argument, the header is printed on stdout (without the `# `)
# and the script exits 0, with no other effect. Scripts that parse options also call `usage`
# for a -h/--help found later on their command line.
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }
case "${1:-}" in
    -h | --help) usage; exit 0 ;;
esac
