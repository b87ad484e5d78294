#!/usr/bin/env bash
# test_docs.sh: the README is a map that leads to every page, and what the
# README and docs/*.md show is true of the tree and of the tool.
#
# - The README is under 300 lines, and shows the two commands (the demo
#   and the test command) as commands that exist in scripts/.
# - Every page docs/*.md is linked from the README.
# - Every relative link in the README and in docs/*.md ([text](target),
#   images included) names a file that exists in the source tree, and a
#   #anchor names a heading of the page it points to (GitHub's rule for
#   a heading's anchor: lower case, punctuation but - and _ left out,
#   spaces made -).
# - Every `eventlog-sink COMMAND ...` in a code block (indented or fenced)
#   or a code span of the README and docs/*.md uses only options that
#   `eventlog-sink COMMAND --help` lists (and `eventlog-sink --help` for
#   the command itself), and every `scripts/NAME.sh --option` names an
#   option its script reads.  Options end at a shell separator (| ; & &&
#   > #); for `ctl`, at its SPEC (what follows are the program's commands
#   and their arguments).
# - docs/LAYOUT.md lists every `Note [Title]` of lib/ and tools/ beside
#   its file, in its folder's section.
#
# Each problem is one line naming the file, the line and what is wrong;
# all are listed before the test fails.  Needs python3 (skips, 77,
# without it) and the built tool; no GHC.
set -u -o pipefail

. "$(dirname "$0")/harness.sh"

TOOL=${TOOL:-$ELS_SINK_TOOL}
[ -x "$TOOL" ] || fail "tool not built: $TOOL"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
make_tmpdir
T=$ELS_TMP

# Each command's --help, as the tool prints it today.
"$TOOL" --help >"$T/help" 2>&1 || fail "eventlog-sink --help exited $?"
for cmd in $(sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' "$T/help"); do
    "$TOOL" "$cmd" --help >"$T/help.$cmd" 2>&1 \
        || fail "eventlog-sink $cmd --help exited $?"
done
ls "$T"/help.* >/dev/null 2>&1 || fail "eventlog-sink --help lists no command: $(cat "$T/help")"

python3 - "$ELS_TOP_SRCDIR" "$T" >"$T/problems" <<'EOF'
import glob, os, re, sys

top, helpdir = sys.argv[1], sys.argv[2]
problems = []
def problem(path, lineno, what):
    problems.append('%s:%d: %s' % (os.path.relpath(path, top), lineno, what))

OPT = re.compile(r'(?:^|(?<=[\s\[|(]))(--?[A-Za-z][A-Za-z0-9-]*)')
def options_in(text):
    return set(OPT.findall(text))

helps = {}
for f in glob.glob(os.path.join(helpdir, 'help.*')):
    helps[f.rsplit('.', 1)[1]] = options_in(open(f).read())
helps[''] = options_in(open(os.path.join(helpdir, 'help')).read())

readme = os.path.join(top, 'README')
pages = sorted(glob.glob(os.path.join(top, 'docs', '*.md')))
files = [readme] + pages
text = {f: open(f, encoding='utf-8').read() for f in files}

# (a) the README is a map, not a manual.
n = text[readme].count('\n')
if n >= 300:
    problem(readme, n, 'the README has %d lines: it must stay under 300 (the rest belongs in docs/)' % n)

# The two commands: shown as commands, and there to run.
two = re.search(r'\nThe two commands\n-+\n(.*?)\n\S[^\n]*\n-+\n', text[readme], re.S)
if not two:
    problem(readme, 1, 'no section "The two commands"')
else:
    cmds = re.findall(r'^    (\S.*)$', two.group(1), re.M)
    if cmds != ['scripts/demo.sh', 'scripts/test-all.sh']:
        problem(readme, 1, 'the two commands are %r, expected scripts/demo.sh and scripts/test-all.sh' % cmds)
    for c in cmds:
        if not os.access(os.path.join(top, c), os.X_OK):
            problem(readme, 1, 'the command %s is not an executable file of the tree' % c)

# Headings' anchors, GitHub's way.
def anchors(path):
    if not path.endswith('.md'):
        return None
    out = set()
    seen = {}
    for line in open(path, encoding='utf-8'):
        m = re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
        if not m:
            continue
        a = re.sub(r'[^\w\- ]', '', m.group(1).lower()).replace(' ', '-')
        k = seen.get(a, 0)
        seen[a] = k + 1
        out.add(a if k == 0 else '%s-%d' % (a, k))
    return out

LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)\)')
linked_from_readme = set()
n_links = n_cmds = n_opts = 0
for f in files:
    in_fence = False
    for i, line in enumerate(text[f].split('\n'), 1):
        if line.lstrip().startswith('```'):
            in_fence = not in_fence
        if in_fence or line.startswith('    '):
            continue
        for target in LINK.findall(line):
            if re.match(r'[a-z][a-z0-9+.-]*:', target):
                continue            # http:, https:, mailto:
            n_links += 1
            path, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not dest.startswith(top + os.sep) or not os.path.exists(dest):
                problem(f, i, 'link %s: no such file %s' % (target, os.path.relpath(dest, top)))
                continue
            if f == readme:
                linked_from_readme.add(dest)
            if anchor:
                a = anchors(dest)
                if a is not None and anchor not in a:
                    problem(f, i, 'link %s: %s has no heading with anchor #%s' % (
                        target, os.path.relpath(dest, top), anchor))

# (b) every page is reachable from the README.
for p in pages:
    if p not in linked_from_readme:
        problem(readme, 1, 'docs/%s is not linked from the README' % os.path.basename(p))

# (d) the options a command line shows are the ones the tool takes.
def code_lines(t):
    """(line number, text) of code: indented or fenced blocks, and spans."""
    in_fence = False
    lines = t.split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        start = i + 1
        if line.lstrip().startswith('```'):
            in_fence = not in_fence
            i += 1
            continue
        if in_fence or line.startswith('    ') or line.startswith('\t'):
            while line.rstrip().endswith('\\') and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + ' ' + lines[i]
            yield start, line
        else:
            for span in re.findall(r'`([^`]+)`', line):
                yield start, span
        i += 1

CMD = re.compile(r'(?:^|[\s/;&|(`$])eventlog-sink\s+(' + '|'.join(
    sorted((k for k in helps if k), key=len, reverse=True)) + r'|--?[A-Za-z][\w-]*)(?=\s|$)(.*)')
SCRIPT = re.compile(r'(?:^|[\s/])scripts/([\w-]+\.sh)((?:\s+[^|;&>#]*)?)')
for f in files:
    for lineno, line in code_lines(text[f]):
        for m in CMD.finditer(line):
            n_cmds += 1
            cmd, rest = m.group(1), m.group(2)
            rest = re.split(r'\s(?:\||;|&&?|>|#)', ' ' + rest)[0]
            if cmd.startswith('-'):
                if cmd not in helps['']:
                    problem(f, lineno, '`eventlog-sink %s`: not an option of eventlog-sink --help' % cmd)
                continue
            if cmd == 'ctl':
                # Options come before SPEC; after it, the program's commands.
                words = rest.split()
                kept = []
                for k, w in enumerate(words):
                    if w.startswith('-') or w.startswith('['):
                        kept.append(w)
                    elif k > 0 and words[k - 1] in ('--secret-file', '--timeout', '--eventlog-sink'):
                        kept.append(w)
                    else:
                        break
                rest = ' '.join(kept)
            n_opts += len(options_in(rest))
            for opt in sorted(options_in(rest)):
                if opt not in helps[cmd]:
                    problem(f, lineno, '`eventlog-sink %s %s`: %s is not listed by `eventlog-sink %s --help`' % (
                        cmd, rest.strip(), opt, cmd))
        for m in SCRIPT.finditer(line):
            script = os.path.join(top, 'scripts', m.group(1))
            if not os.path.exists(script):
                problem(f, lineno, 'scripts/%s: no such script' % m.group(1))
                continue
            src = open(script, encoding='utf-8').read()
            for opt in sorted(o for o in options_in(m.group(2)) if o.startswith('--')):
                if opt not in src:
                    problem(f, lineno, 'scripts/%s %s: the script reads no option %s' % (
                        m.group(1), m.group(2).strip(), opt))

# (e) the layout page lists every Note where it is: each `Note [Title]`
# block of lib/ and tools/ under its folder's section, beside its file.
layout = os.path.join(top, 'docs', 'LAYOUT.md')
sections = {}
for part in re.split(r'(?m)^## ', text.get(layout, ''))[1:]:
    m = re.match(r'`([^`]+?)/?`', part)
    if m:
        sections[m.group(1)] = part
NOTE = re.compile(r'^(?:/\*| \*|//) ?Note \[([^\]]+)\]\s*$')
n_notes = 0
for d in ('lib', 'tools'):
    for root, _, names in os.walk(os.path.join(top, d)):
        for name in sorted(names):
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(root, name)
            folder = os.path.relpath(root, top)
            for i, line in enumerate(open(path, encoding='utf-8', errors='replace'), 1):
                m = NOTE.match(line)
                if not m:
                    continue
                n_notes += 1
                sec = sections.get(folder)
                if sec is None:
                    problem(path, i, 'docs/LAYOUT.md has no section for %s/' % folder)
                elif not re.search(r'(?m)^\* `%s`: .*\[%s\]' % (re.escape(name), re.escape(m.group(1))), sec):
                    problem(path, i, 'Note [%s] is not listed beside %s in docs/LAYOUT.md' % (m.group(1), name))

for p in problems:
    print(p)
print('checked %d Notes in docs/LAYOUT.md' % n_notes, file=sys.stderr)
print('checked %d files: %d links, %d eventlog-sink command lines with %d options' % (
    len(files), n_links, n_cmds, n_opts), file=sys.stderr)
EOF
rc=$?
[ "$rc" -eq 0 ] || fail "the checker exited $rc: $(cat "$T/problems")"
if [ -s "$T/problems" ]; then
    while IFS= read -r line; do echo "FAIL: $els_test_name: $line" >&2; done <"$T/problems"
    fail "$(wc -l <"$T/problems") problems in the README and docs/*.md (above)"
fi
exit 0
