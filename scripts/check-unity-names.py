"""Refuses a unity batch whose sources could change each other's meaning when compiled as one unit.

CMake's unity build (src/CMakeLists.txt, GRASSAUDIT_UNITY) compiles several .cpp files of a library
as one translation unit. Two files that each define a name with internal linkage (in an anonymous
namespace, or `static` at namespace scope) would then see each other's: the same signature is a
compile error, but another signature is a silent overload that a call may pick. A macro or a
`using namespace` in one file reaches every file after it. This check reads the sources of each
batch (the unity_*.cxx files CMake writes) and fails, naming the files and the name, when
  - a name with internal linkage is declared in two files of one batch, or is in one file internal
    and in another a function with external linkage (a call both fit is ambiguous);
  - a file #defines a macro without #undef-ing it, and another file of the batch uses that word;
  - a file has `using namespace` at namespace scope (not in a function), ahead of another file of
    the batch without the same directive (the next file reopens the namespace, and the directive
    is still there), unless that file's code all stands inside the named namespace, where its
    names are found first anyway.
    python3 scripts/check-unity-names.py BUILD_DIR
Exit 0: every batch is safe; 1: a clash (one line each); 2: usage."""
import collections
import glob
import os
import re
import sys

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "operator", "const", "constexpr", "static",
            "inline", "struct", "class", "enum", "using", "namespace", "template", "typename", "auto", "void",
            "int", "double", "float", "bool", "char", "unsigned", "long", "short", "signed", "noexcept",
            "override", "final", "decltype", "new", "delete", "default", "case", "throw", "try", "catch",
            "thread_local", "extern", "volatile", "mutable", "explicit", "friend", "typedef", "union"}


def strip(text):
    """The source without comments, string and character literals (each replaced by a space)."""
    text = re.sub(r'R"(\w*)\((?:.|\n)*?\)\1"', " ", text)
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def declared_name(statement):
    """The name a namespace-scope declaration or definition introduces, or None."""
    s = re.sub(r"\s+", " ", statement).strip()
    if not s:
        return None
    m = re.match(r"(?:template ?<.*?> ?)?(?:struct|class|enum(?: class)?|union) (\w+)", s)
    if m:
        return m.group(1)
    m = re.match(r"using (\w+) ?=", s)
    if m:
        return m.group(1)
    if s.startswith(("using ", "namespace", "extern ", "static_assert", "template class", "friend ")) or "operator" in s:
        return None
    s = re.sub(r"^template ?<.*?> ?", "", s)
    s = re.split(r"=(?!=)", s, maxsplit=1)[0]  # the declarator, not the initialiser
    while re.search(r"<[^<>]*>", s):             # template arguments, innermost first
        s = re.sub(r"<[^<>]*>", " ", s)
    s = re.split(r"[({\[;]", s, maxsplit=1)[0]
    if re.search(r"::\s*~?\w+\s*$", s):      # Class::member defined out of its class: no new name
        return None
    words = [w for w in re.findall(r"[A-Za-z_]\w*", s) if w not in KEYWORDS]
    return words[-1] if words else None


# GoogleTest's and RapidCheck's test macros: TEST(Suite, Name) declares the class Suite_Name_Test,
# and a suite's tests may spread over several files of one binary (gtest refuses a repeated pair).
TEST_MACRO = re.compile(r"\b(?:TEST|TEST_F|TEST_P|TYPED_TEST|RC_GTEST_PROP|RC_GTEST_FIXTURE_PROP)\s*\(\s*(\w+)\s*,\s*(\w+)")


def macro_declared(statement):
    """Names a macro call declares where a declaration may stand, e.g. UNARY(op_abs, ...): the
    first argument of every all-caps call; a test macro's class name."""
    tests = {f"{a}_{b}_Test" for a, b in TEST_MACRO.findall(statement)}
    rest = TEST_MACRO.sub(" ", statement)
    return tests | set(re.findall(r"\b[A-Z][A-Z0-9_]*\s*\(\s*([A-Za-z_]\w*)", rest))


def external_declared(statement, scope):
    """The name a statement in a named namespace declares with external linkage (a function or
    object that is not `static`): an internal one of the same name in another file of the batch
    makes the calls that both fit ambiguous."""
    if scope != "ns" or re.match(r"(?:inline )?static ", statement) or re.match(r"(?:using|typedef|namespace|template\s*<|class|struct|enum|union|friend|extern\s+template)\b", statement):
        return set()
    if "(" not in statement:
        return set()
    name = declared_name(statement)
    return {name} if name else set()


def internal_declared(statement, scope):
    """The internal-linkage names one statement at namespace scope declares: in an anonymous
    namespace every name (macro calls' too), in a named one only a `static` declaration's."""
    if scope == "anon":
        name = None if TEST_MACRO.search(statement) else declared_name(statement)
        return macro_declared(statement) | ({name} if name else set())
    if re.match(r"(?:inline )?static ", statement):
        name = declared_name(statement)
        return {name} if name else set()
    return set()


# What one file of a batch declares and uses: internal names, external functions, macros left
# defined, `using namespace` directives at namespace scope, the one namespace all of its code
# stands in, every word.
Facts = collections.namedtuple("Facts", "internal external macros usings inside words")


def internal_names(path):
    """Names with internal linkage (anonymous namespaces, namespace-scope `static`), macros left
    defined, the namespaces a `using namespace` at namespace scope names, the one namespace all of
    the file's code stands in (where such a directive changes nothing), and every word of the
    file."""
    raw = open(path, encoding="utf-8", errors="replace").read()
    macros = set()
    for line in raw.splitlines():
        m = re.match(r"\s*#\s*define\s+(\w+)", line)
        if m:
            macros.add(m.group(1))
        m = re.match(r"\s*#\s*undef\s+(\w+)", line)
        if m:
            macros.discard(m.group(1))
    text = "\n".join(l for l in strip(raw).splitlines() if not l.lstrip().startswith("#"))
    names, external, stack, stmt, global_using = set(), set(), [], [], set()
    top_ns, top_other = set(), False  # the namespaces opened at file scope; anything else there
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "{":
            s = "".join(stmt).strip()
            kind = "block"
            if re.search(r"(?:^|\s)namespace\s*$", s):
                kind = "anon"
            elif re.search(r"(?:^|\s)namespace\s+[\w:]+\s*$", s):
                kind = "ns"
            elif stack and stack[-1] in ("anon", "ns"):
                names |= internal_declared(s, stack[-1])
                external |= external_declared(s, stack[-1])
            if not stack:
                if kind == "ns":
                    top_ns.add(s.split()[-1].split("::")[0])
                else:
                    top_other = True
            stack.append(kind)
            stmt = []
        elif c == "}":
            if stack and stack[-1] == "anon":  # macro calls just before the namespace closes
                names |= macro_declared("".join(stmt))
            if stack:
                stack.pop()
            stmt = []
        elif c == ";":
            s = "".join(stmt).strip()
            if s.startswith("using namespace") and all(k in ("anon", "ns") for k in stack):
                global_using.add(re.sub(r"\s+", "", s[len("using namespace"):]))  # reaches the next file
            if stack and stack[-1] in ("anon", "ns"):
                names |= internal_declared(s, stack[-1])
                external |= external_declared(s, stack[-1])
            elif not stack and s:
                top_other = True
            stmt = []
        else:
            stmt.append(c)
        i += 1
    inside = top_ns if len(top_ns) == 1 and not top_other else set()
    return Facts(names, external, macros, global_using, inside, set(re.findall(r"[A-Za-z_]\w*", text)))


def batches(build_dir):
    build_dir = os.path.abspath(build_dir)  # build.ninja names paths both ways; compare absolute ones
    # The batches the build compiles: a Unity folder may still hold files of an earlier
    # configuration, which build.ninja no longer names.
    ninja = os.path.join(build_dir, "build.ninja")
    live = None
    if os.path.exists(ninja):
        live = set(re.findall(r"(\S*/Unity/unity_\w+\.cxx)(?=[\s:|]|$)", open(ninja).read()))
        live = {os.path.normpath(os.path.join(build_dir, p)) for p in live}
    for unity in sorted(glob.glob(os.path.join(build_dir, "**", "Unity", "unity_*.cxx"), recursive=True)):
        if live is not None and os.path.normpath(unity) not in live:
            continue
        files = re.findall(r'#include\s+"([^"]+)"', open(unity).read())
        yield unity, [f for f in files if f.endswith(".cpp")]


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: check-unity-names.py BUILD_DIR", file=sys.stderr)
        return 2
    clashes = []
    for unity, files in batches(sys.argv[1]):
        seen = {}
        facts = {f: internal_names(f) for f in files}
        for k, f in enumerate(files):
            ff = facts[f]
            for name in ff.internal:
                if name in seen:
                    clashes.append(f"{name}: internal to both {seen[name]} and {f}")
                seen.setdefault(name, f)
            for g in files:
                if g != f:
                    for name in sorted(ff.internal & facts[g].external):
                        clashes.append(f"{name}: internal to {f}, a function of {g} too")
            for g in files[k + 1:]:
                fg = facts[g]
                for m in sorted(ff.macros & fg.words):
                    clashes.append(f"{m}: a macro of {f}, used in {g} after it")
                for ns in sorted(ff.usings - fg.usings - fg.inside):  # harmless where g has it, or lives in ns
                    clashes.append(f"`using namespace {ns}` at namespace scope in {f}, ahead of {g}")
    for c in clashes:
        print(f"unity build: {c} (mark the source SKIP_UNITY_BUILD_INCLUSION or rename)", file=sys.stderr)
    return 1 if clashes else 0


if __name__ == "__main__":
    sys.exit(main())
