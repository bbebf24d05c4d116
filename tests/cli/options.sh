#!/usr/bin/env bash
# One option table per subcommand: each command takes exactly the options its usage lists, and
# the README's command block, tessera.1's synopsis and the bash completion list the same ones;
# any other option is a usage error naming the option and the command; --help, -h and
# help [COMMAND] print a command's usage on stdout and exit 0, with each option's description
# and default, the words of tessera.1's OPTIONS (both from cli/main.c's option table).
. "${SRC:?}/tests/cli/lib/common.sh"
cmds="render preview profile check controller"
none="$tmp/none.yaml" # no such design: an accepted option fails later, never runs a job

# the flags a text names: -o and --long, each once, sorted
flags() { grep -oE -- '(^|[[ ])(-o|--[a-z][a-z-]*)' | sed 's/^[[ ]//' | sort -u; }
# the README's command block, a command's lines (its first and the indented ones after it)
readme_flags() {
    sed -n '/^tessera render  DESIGN/,/^```/p' "$SRC/README.md" |
        awk -v c="$1" '/^tessera / { on = ($2 == c) } on' | flags
}
# tessera.1's synopsis entry .SY "tessera CMD" ... .YS
man_flags() {
    sed -n "/^\.SY \"tessera $1\"/,/^\.YS/p" "$SRC/docs/tessera.1" | sed 's/\\-/-/g' | flags
}
completion_flags() {
    # shellcheck disable=SC1091
    bash -c 'source "$1"; COMP_WORDS=(tessera "$2" -); COMP_CWORD=2; _tessera
        printf "%s\n" "${COMPREPLY[@]}"' _ "$SRC/cli/tessera.bash" "$1" | grep -vx -- --help |
        sort -u
}

# the usage lines of a --help (its options' descriptions follow "options:" and name others)
usage_part() { sed '/^options:$/,$d' "$@"; }
# the options a --help describes, one a line: "  --name ARG   text" starts each entry
described() { sed -n '/^options/,$p' "$1" | grep -oE -- '^  (-o|--[a-z][a-z-]*)' | sed 's/^ *//' | sort -u; }
# one option's description in a --help: its entry's text (from column 25), lines joined
help_text() {
    sed -n '/^options:$/,$p' "$1" | awk -v o="$2" '
        /^  -/ { split($0, f, " "); on = (f[1] == o || f[1] == o ",")
                 if (on && substr($0, 23, 2) != "  ") next } # a long head has a line alone
        on { x = substr($0, 25); sub(/^ +/, "", x); if (x != "") t = t (t ? " " : "") x }
        END { print t }'
}
# the man page's paragraph for one option in OPTIONS: the lines after its .B/.BI header, joined
man_text() {
    sed -n '/^\.SH OPTIONS/,/^\.SH SIGNALS/p' "$SRC/docs/tessera.1" | awk -v o="$1" '
        /^\.BI? / { h = $2; gsub(/\\-/, "-", h); on = (h == o); next }
        /^\./ { on = 0; next }
        on { t = t (t ? " " : "") $0 }
        END { gsub(/\\-/, "-", t); print t }'
}
all=$(for c in $cmds; do "$TESSERA" "$c" --help | usage_part; done | flags)
for c in $cmds; do
    "$TESSERA" "$c" --help >"$tmp/help" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && grep -q "^  tessera $c " "$tmp/help" &&
        [ "$(grep -c '^  tessera ' "$tmp/help")" -eq 1 ] &&
        ok "$c --help: its usage only, on stdout, exit 0" || bad "$c --help: rc $rc, $(cat "$tmp/help" "$tmp/err")"
    "$TESSERA" "$c" -h >"$tmp/h" 2>&1 && cmp -s "$tmp/h" "$tmp/help" && ok "$c -h = $c --help" ||
        bad "$c -h: $(cat "$tmp/h")"
    "$TESSERA" help "$c" >"$tmp/h" 2>&1 && cmp -s "$tmp/h" "$tmp/help" &&
        ok "help $c = $c --help" || bad "help $c: $(cat "$tmp/h")"
    own=$(usage_part "$tmp/help" | flags)
    # every option the usage names is described, with nothing else: -h/--help aside
    [ "$(described "$tmp/help" | grep -vx -- --help)" = "$own" ] &&
        ok "$c --help: describes each of its options" ||
        bad "$c --help describes $(described "$tmp/help" | tr '\n' ' ')!= usage $(echo "$own" | tr '\n' ' ')"
    for o in $own; do
        [ "$o" = -o ] && continue # each command's -o is its own (tessera.1's COMMANDS)
        h=$(help_text "$tmp/help" "$o")
        m=$(man_text "$o")
        [ -n "$h" ] && [ "$h" = "$m" ] && ok "$c $o: --help and tessera.1 say the same" ||
            bad "$c $o: --help '$h' != tessera.1 '$m'"
    done
    [ -n "$own" ] && [ "$(readme_flags "$c")" = "$own" ] && ok "$c: the README lists its usage's options" ||
        bad "$c: README $(readme_flags "$c" | tr '\n' ' ')!= usage $(echo "$own" | tr '\n' ' ')"
    [ "$(man_flags "$c")" = "$own" ] && ok "$c: tessera.1's synopsis lists them" ||
        bad "$c: tessera.1 $(man_flags "$c" | tr '\n' ' ')!= usage $(echo "$own" | tr '\n' ' ')"
    [ "$(completion_flags "$c")" = "$own" ] && ok "$c: the completion offers them" ||
        bad "$c: completion $(completion_flags "$c" | tr '\n' ' ')"
    design=$none
    [ "$c" = controller ] && design=
    # every option the README shows for c is c's: whatever else fails, not the option
    for o in $(readme_flags "$c"); do
        # shellcheck disable=SC2086
        timeout 20 "$TESSERA" "$c" $design "$o" >/dev/null 2>"$tmp/err" </dev/null
        if grep -q "is not an option of" "$tmp/err"; then bad "$c $o refused: $(cat "$tmp/err")"
        else ok "$c takes $o"; fi
    done
    # every other command's option is refused by c, named with c and only c's usage
    for o in $all; do
        # a here-string, not `echo | grep -q`: under pipefail, echo killed by SIGPIPE when grep
        # stops at its first line made the pipeline fail now and then (render --backend)
        grep -qx -- "$o" <<<"$own" && continue
        # shellcheck disable=SC2086
        "$TESSERA" "$c" $design "$o" >"$tmp/out" 2>"$tmp/err" </dev/null
        rc=$?
        [ $rc -eq 2 ] && [ ! -s "$tmp/out" ] &&
            grep -qF -- "tessera $c: $o is not an option of $c, but of " "$tmp/err" &&
            grep -qF -- "(see tessera $c --help)" "$tmp/err" &&
            [ "$(grep -c '^  tessera ' "$tmp/err")" -eq 1 ] && grep -q "^  tessera $c " "$tmp/err" &&
            ok "$c refuses $o" || bad "$c $o: rc $rc, $(cat "$tmp/err")"
    done
done

# the issue's case: check exited 0 and ignored all three
"$TESSERA" check "$SRC/designs/examples/microlens-array.yaml" --json --scale 4 --depth 16 \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && [ ! -s "$tmp/out" ] &&
    grep -qF "tessera check: --json is not an option of check, but of profile (see tessera check --help)" "$tmp/err" &&
    ! grep -q "tessera render" "$tmp/err" && ok "check D --json --scale 4 --depth 16: exit 2, check's usage only" ||
    bad "check --json: rc $rc, $(cat "$tmp/err")"
# refuse PATTERN ARGS...: exit 2, nothing on stdout, PATTERN (a fixed string) on stderr
refuse() {
    local pat=$1
    shift
    "$TESSERA" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local rc=$?
    [ $rc -eq 2 ] && [ ! -s "$tmp/out" ] && grep -qF -- "$pat" "$tmp/err" && ok "$*: exit 2, '$pat'" ||
        bad "$*: rc $rc, $(cat "$tmp/out" "$tmp/err")"
}
# an option nobody takes; a value given to a flag; an ambiguous abbreviation; -o
refuse "tessera render: --frob is not an option of render (see tessera render --help)" render "$none" --frob
refuse "tessera profile: --json=1: takes no value" profile "$none" --json=1
refuse "tessera check: --t: ambiguous, one of --threads, --tile, --tree" check "$none" --t
"$TESSERA" check "$none" --tr >/dev/null 2>"$tmp/err"
grep -q "is not an option\|ambiguous" "$tmp/err" && bad "check --tr: $(cat "$tmp/err")" ||
    ok "check --tr abbreviates --tree"
refuse "tessera check: -o is not an option of check, but of render, preview, profile, controller" check "$none" -o x

# help, --help, -h: the whole usage on stdout; help of an unknown command, or of two, exits 2
"$TESSERA" help >"$tmp/help" 2>"$tmp/err"
[ $? -eq 0 ] && [ ! -s "$tmp/err" ] && for c in $cmds help; do grep -q "^  tessera $c " "$tmp/help" || false; done &&
    ok "help: every command's usage, exit 0" || bad "help: $(cat "$tmp/help" "$tmp/err")"
[ "$(described "$tmp/help")" = "$(echo "$all" | grep -vx -- -o)" ] &&
    ok "help: describes every long option" || bad "help describes $(described "$tmp/help" | tr '\n' ' ')"
for h in --help -h; do
    "$TESSERA" $h >"$tmp/h" 2>&1 && cmp -s "$tmp/h" "$tmp/help" && ok "$h = help" || bad "$h: $(cat "$tmp/h")"
done
refuse "tessera help: frob: unknown command" help frob
refuse "render: at most one COMMAND" help check render
refuse "tessera help: --json is not an option of help" help --json
refuse "tessera: frob: unknown command (see tessera --help)" frob
refuse "tessera version: x: takes no arguments" --version x

finish
