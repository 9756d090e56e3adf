#!/usr/bin/env python3
# Whether a failed device unit's error is the answer's own (src/worker/python/split_verdict.py, issue
# 35): the scan of preprocessed headers at namespace scope, and the rules over nvcc's messages. No
# compiler needed (test_extension_pch.py's a_kernels_own_error_from_the_device_unit runs nvcc); and
# how the builder reads ninja's failures (extension_cache.py).
# Usage: test_split_verdict.py SRC/worker/python
import os
import sys

sys.path.insert(0, sys.argv[1])
import cuda_split  # noqa: E402
import split_verdict as sv  # noqa: E402

HEADERS = r'''# 1 "probe.cu"
# 1 "/usr/include/stdio.h" 1 3
#define TORCH_CHECK(c, ...) ((void)(c))
#define PI_ISH 3
#undef PI_ISH
#define HEADER_MACRO 2
extern "C" {
int printf(const char* __restrict __format, ...);
typedef struct _object { long ob_refcnt; } PyObject;
}
int (*global_handler)(int signal_number);
int parenthesised_name_itself (paren_global);
enum Colour { kRed, kGreen };
enum class Scoped { kHidden };
static union { int anon_member; };
template <typename Hidden_T, int HiddenN = (1 > 0)> struct Box { int box_member; };
template <size_t index, std::enable_if_t<index<tuple_size<H>::value, int> = 0> int tricky_name(H head_param) { int body_local; }
const char* text = "a { brace in a literal";
char c = '{';
namespace at {
int sigmoid(int x) { return x; }
namespace detail { int deep_name; }
}
namespace std { inline namespace __cxx11 { int std_inline_name; } int std_name(int); }
namespace nominated { int nominated_name; }
using namespace nominated;
namespace { int unnamed_ns_name; }
inline namespace v1 { int inline_ns_name; }
void function_with_body(int param_name) { int local_name; if (1) { } }
class Klass { int member_name; void method(); };
'''


def scan_finds_namespace_scope_names():
    d = sv.scan(HEADERS)
    assert d is not None
    visible = d.visible_at_file_scope()
    for name in ("printf", "PyObject", "global_handler", "paren_global", "kRed", "kGreen", "Colour", "Box", "tricky_name",
                 "anon_member", "nominated_name", "unnamed_ns_name", "inline_ns_name", "function_with_body", "Klass",
                 "text", "c"):
        assert name in visible, name
    # parameters, template parameters, bodies, classes' members, scoped enumerators, namespaces' own
    for name in ("param_name", "local_name", "member_name", "box_member", "kHidden", "Hidden_T", "HiddenN", "signal_number",
                 "body_local", "sigmoid", "deep_name", "std_name", "std_inline_name", "brace"):
        assert name not in visible, name
    # head_param: inside a template head that does not read as one, so it counts (never dropped unsure)
    assert "head_param" in visible
    assert "sigmoid" in d.names[("at",)] and "deep_name" in d.names[("at", "detail")]
    assert "std_inline_name" in d.names[("std",)] and "std_name" in d.outside(sv.TORCH_NAMESPACES)
    assert "sigmoid" not in d.outside(sv.TORCH_NAMESPACES)
    assert "TORCH_CHECK" in d.macros and "PI_ISH" not in d.macros
    assert sv.View(HEADERS, {}).macros() == d.macros
    # torch's namespaces skipped (View's fast scan) give the same answers, until a using-directive
    # at file scope nominates one: then the whole text is read
    fast = sv.scan(HEADERS, skip_torch=True)
    assert fast.skipped == {"at"} and fast.visible_at_file_scope() == visible, fast.skipped
    assert fast.outside(sv.TORCH_NAMESPACES) == d.outside(sv.TORCH_NAMESPACES)
    nominating = HEADERS + "using namespace at;\n"
    assert sv.scan(nominating, skip_torch=True).visible_at_file_scope() is None
    assert "sigmoid" in sv.View(nominating, {}).declarations().visible_at_file_scope()


def scan_gives_up_on_unbalanced_text():
    assert sv.scan("namespace a { int x;") is None
    assert sv.scan("int x; }") is None
    assert sv.scan('const char* s = "unterminated;\n') is None


ANSWER = '''#include <torch/extension.h>
#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), "need CUDA")
__global__ void k(const float* a, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * SCALE + undeclared_scale;
}
torch::Tensor f(torch::Tensor a) {
    CHECK_CUDA(a);
    auto c = torch::empty_like(a);
    k<<<1, 32>>>(a.data_ptr<float>(), c.data_ptr<float>(), a.numel());
    return c;
}
'''
PATH = "/build/cuda.cu"


def views(extra=""):
    return [sv.View(HEADERS + extra, {}), sv.View(HEADERS + extra, {})]


def message(text, line=5, code="    if (i < n) c[i] = a[i] * SCALE + undeclared_scale;", file=PATH):
    return f"FAILED: cuda.kwb-device.cuda.o\nnvcc ...\n{file}({line}): error: {text}\n{code}\n      ^\n\n1 error detected in the compilation of \"/build/cuda.kwb-device.cu\".\n"


def decide(output, answer=ANSWER, v=None):
    s = cuda_split.split_cuda_source(answer, PATH)
    return sv.answer_error(output, PATH, answer, s.device, v if v is not None else views(), cuda_split.LAUNCHER_FILE,
                           s.left_out)


def rules_claim_what_torch_cannot_mend():
    reason, why = decide(message('identifier "undeclared_scale" is undefined'))
    assert reason and 'identifier "undeclared_scale" is undefined' in reason and not why, (reason, why)
    reason, why = decide(message('class "uint3" has no member "w"', code="  int j = threadIdx.w;"))
    assert reason, why


def rules_leave_the_rest_to_the_whole_build():
    cases = [  # (what the kernel's line computes, nvcc's message, why the rules decline)
        ("printf(i)", 'identifier "printf" is undefined', "printf"),  # torch declares it at file scope
        ("nominated_name", 'identifier "nominated_name" is undefined', "nominated_name"),  # a using-directive's
        ("std_name(i)", 'identifier "std_name" is undefined', "argument-dependent"),
        ("a[i] +", 'expected an expression', "rules do not decide"),
        ("u.w", 'class "uint3" has no member "w"', "built-in variable"),
    ]
    for expression, said, why in cases:
        code = f"    if (i < n) c[i] = {expression};"
        answer = ANSWER.replace("    if (i < n) c[i] = a[i] * SCALE + undeclared_scale;", code)
        reason, why_not = decide(message(said, code=code), answer=answer)
        assert not reason and why in why_not, (why, reason, why_not)
    for output, why in ((message('identifier "undeclared_scale" is undefined', file=cuda_split.LAUNCHER_FILE),
                         "outside the answer's lines"),
                        (message('identifier "kwb_split_p6" is undefined'), "not the answer's")):
        reason, why_not = decide(output)
        assert not reason and why in why_not, (why, reason, why_not)
    # what the device unit leaves out may declare the name at file scope: a host variable, a host
    # function's name, or a macro of the answer's used there
    said = message('identifier "undeclared_scale" is undefined')
    for declaring in ("int undeclared_scale = 1;\n", "int undeclared_scale() { return 1; }\n",
                      "#define DECLARE(v) int v##_unused; float undeclared_scale = 2.f;\n".replace("v##_unused", "v")
                      + "DECLARE(one)\n"):
        answer = ANSWER.replace("torch::Tensor f(", declaring + "torch::Tensor f(")
        reason, why_not = decide(said, answer=answer)
        assert not reason and "host code" in why_not, (declaring, why_not)
    # a host function's local or parameter of that name is no kernel's (the real answers' common case)
    for local in ("int undeclared_scale = 1; auto c = ", "auto c = "):
        answer = ANSWER.replace("auto c = ", local).replace("torch::Tensor a)", "torch::Tensor a, int undeclared_scale)")
        reason, why_not = decide(said, answer=answer)
        assert reason, (local, why_not)
    # a macro whose braces do not balance could reach out of a body
    reason, why_not = decide(said, answer="#define OPEN {\n" + ANSWER)
    assert not reason and "unbalanced" in why_not, why_not
    # a macro torch defines that the kernels use reads differently in the two builds
    macro = ANSWER.replace("a[i] * SCALE", "a[i] * HEADER_MACRO")
    reason, why_not = decide(message('identifier "undeclared_scale" is undefined'), answer=macro)
    assert not reason and "HEADER_MACRO" in why_not, why_not
    # an error in another form first (here the host compiler's): what EDG says after it may follow from it
    reason, why_not = decide("FAILED: x\nnvcc ...\n/build/cuda.cu:3:1: error: expected ';'\n"
                             + message('identifier "undeclared_scale" is undefined').split("\n", 2)[2])
    assert not reason and "another form" in why_not, why_not
    # token pasting, unreadable headers
    reason, why_not = decide(message('identifier "undeclared_scale" is undefined'), answer=ANSWER + "#define CAT(a, b) a##b\n")
    assert not reason and "##" in why_not
    reason, why_not = decide(message('identifier "undeclared_scale" is undefined'), v=[])
    assert not reason and "could not be read" in why_not
    # a view whose text cannot be scanned, where the name occurs: nothing may be concluded
    broken = sv.View(HEADERS + "namespace open { int undeclared_scale;", {})
    reason, why_not = decide(message('identifier "undeclared_scale" is undefined'), v=[broken])
    assert not reason and "could not be read" in why_not, why_not
    # where the name occurs nowhere in the headers, no scan is needed (and an unreadable text is no matter)
    unread = sv.View(HEADERS + "namespace open { int other;", {})
    reason, why_not = decide(message('identifier "undeclared_scale" is undefined'), v=[unread])
    assert reason and not unread._scans, why_not
    # an answer that nominates a namespace of torch's (`using namespace at;`: its device unit leaves
    # it out) sees that namespace's names in the whole build: its body is read, not skipped (until
    # session 38 it was, and `sigmoid` got the verdict of the kernel's own error)
    for expression, name in (("sigmoid(i)", "sigmoid"), ("sigmoid", "sigmoid")):
        code = f"    if (i < n) c[i] = {expression};"
        answer = "using namespace at;\n" + ANSWER.replace("    if (i < n) c[i] = a[i] * SCALE + undeclared_scale;", code)
        reason, why_not = decide(message(f'identifier "{name}" is undefined', code=code), answer=answer)
        assert not reason and "namespace the answer opens" in why_not, (expression, reason, why_not)
    # and what that namespace's own using-directives nominate (torch 2's `namespace torch { using
    # namespace at; }`), though the scan skips the nominated one's body at first
    headers = sv.View(HEADERS + "\nnamespace torch { using namespace at; }\n", {})
    code = "    if (i < n) c[i] = sigmoid;"
    answer = "using namespace torch;\n" + ANSWER.replace("    if (i < n) c[i] = a[i] * SCALE + undeclared_scale;", code)
    reason, why_not = decide(message('identifier "sigmoid" is undefined', code=code), answer=answer, v=[headers])
    assert not reason and "namespace the answer opens" in why_not, (reason, why_not)
    assert headers.declarations({"torch"}).skipped == set()  # read whole: the directive nominates `at`
    # a kernel inside a namespace that the answer opens sees that namespace's names (its body is
    # read, whatever the scan skips; torch's own the split declines: "code in torch's namespace")
    for expression, name in (("std_name(i)", "std_name"), ("std_name", "std_name"), ("std_inline_name", "std_inline_name")):
        code = f"    if (i < n) c[i] = {expression};"
        answer = "namespace std { }\n" + ANSWER.replace(
            "    if (i < n) c[i] = a[i] * SCALE + undeclared_scale;", code)
        reason, why_not = decide(message(f'identifier "{name}" is undefined', code=code), answer=answer)
        assert not reason and "namespace the answer opens" in why_not, (name, reason, why_not)


def launchers_are_set_off_under_their_own_file():
    s = cuda_split.split_cuda_source(ANSWER, PATH)
    assert f'#line 1 "{cuda_split.LAUNCHER_FILE}"' in s.device
    part = sv.answer_part(s.device, cuda_split.LAUNCHER_FILE)
    assert cuda_split.LAUNCHER_PREFIX not in part and "undeclared_scale" in part
    assert "TORCH_CHECK" not in sv.used_names(part) and "undeclared_scale" in sv.used_names(part)


def directives_only_keeps_lines():
    text = "#include <a.h>\nint x;\n#define M(a) \\\n  (a)\nint y;\n"
    out = sv.directives_only(text)
    assert out.split("\n")[:5] == ["#include <a.h>", "", "#define M(a) \\", "  (a)", ""], out


def ninjas_failed_lines_of_either_version():
    import extension_cache as ec  # standard library only until a build runs
    # ninja 1.11's `FAILED: obj` and 1.12's `FAILED: [code=2] obj` (the GPU machine's): the target
    # either way, so a split unit's failure is never read as load_inline's main.cpp's
    output = ("[1/3] nvcc ...\nFAILED: [code=2] cuda.kwb-device.cuda.o \nnvcc -c cuda.kwb-device.cu\n"
              "/b/cuda.cu(5): error: identifier \"x\" is undefined\nFAILED: main.o\ng++ -c main.cpp\n"
              "ninja: build stopped: subcommand failed.\n")
    assert ec._failed_targets(output) == ["cuda.kwb-device.cuda.o", "main.o"], ec._failed_targets(output)
    block = ec._failed_block(output, "cuda.kwb-device.cuda.o")
    assert block.startswith("FAILED: [code=2] cuda.kwb-device.cuda.o") and block.endswith('is undefined'), block
    assert ec._failed_block(output, "main.o") == "FAILED: main.o\ng++ -c main.cpp"


def scans_at_once_as_one_by_one():
    # read_at_once scans all but one view in forked children: the same Declarations as each alone,
    # a view that does not read (unbalanced) None either way, and no child left behind
    texts = [HEADERS, HEADERS.replace("int (*global_handler)", "int (*other_handler)"), HEADERS + "\nnamespace open {\n"]
    alone = [sv.View(t, {}) for t in texts]
    together = [sv.View(t, {}) for t in texts]
    forked, real = [], sv._scan_in_a_child
    sv._scan_in_a_child = lambda view, keep: forked.append(view) or real(view, keep)
    sv.FORK_SCANS = True  # (as in a builder process; a worker building in its own process does not fork)
    sv.read_at_once(together)
    assert forked == together[1:], len(forked)
    assert all(v.scanned() for v in together)
    for a, b in zip(alone, together):
        da, db = a.declarations(), b.declarations()
        if da is None:
            assert db is None
            continue
        assert (da.names, da.directives, da.macros, da.skipped) == (db.names, db.directives, db.macros, db.skipped)
        assert da.visible_at_file_scope() == db.visible_at_file_scope()
    assert together[2].declarations() is None and "other_handler" in together[1].declarations().visible_at_file_scope()
    try:
        os.waitpid(-1, os.WNOHANG)
        raise AssertionError("a scan's child was left unwaited")
    except ChildProcessError:
        pass  # no child at all
    sv.read_at_once(together)  # read already: nothing forked, nothing changed
    assert together[0].declarations() is not None
    sv.FORK_SCANS = False  # one after another: no child
    sv.read_at_once([sv.View(HEADERS, {}), sv.View(HEADERS, {})])
    assert len(forked) == 2, len(forked)
    sv.FORK_SCANS = True
    sv.read_at_once(together[:2], {"at"})  # torch's `at` kept: read this time
    assert all(v.scanned({"at"}) for v in together[:2]) and "at" in together[0].declarations().skipped
    assert "sigmoid" in together[1].declarations({"at"}).names[("at",)]
    sv._scan_in_a_child, sv.FORK_SCANS = real, False


def _stand_in_toolchain(root, niced_s, normal_s=None):
    """A build folder whose build.ninja names a stand-in nvcc: its --dryrun names two preprocessor
    commands (two views) of a stand-in preprocessor that records its niceness and pid in root/runs,
    sleeps niced_s where it runs niced and normal_s (default the same) where it does not, and
    writes a view (-dD: a declaration, -dM: a macro); `#error` in the source makes it fail as gcc
    would. (Sleeps, not work: what the case checks does not hang on how busy the machine is.)"""
    normal_s = niced_s if normal_s is None else normal_s
    cpp, nvcc = os.path.join(root, "cpp"), os.path.join(root, "nvcc")
    with open(cpp, "w") as f:
        f.write("#!/bin/sh\nfor a; do case $a in *.cu) src=$a;; esac; prev_o=$o; o=$a; done\n"
                f'n=$(nice); echo "$n $$" >> {root}/runs\n'
                f'if [ "$n" -gt 0 ]; then sleep {niced_s}; else sleep {normal_s}; fi\n'
                'if grep -q "#error" "$src"; then echo "$src:1:2: error: #error stop" >&2; exit 1; fi\n'
                'case " $* " in *" -dD "*) echo "int declared_at_file_scope;" > "$o";; *) echo "#define OWN 1" > "$o";; esac\n')
    with open(nvcc, "w") as f:
        f.write("#!/bin/sh\nfor a; do case $a in *.cu) src=$a;; esac; done\n"
                f'echo "#\\$ _HERE_=/nowhere"\necho "#\\$ {cpp} -D__VIEW__=0 -E -x c++ \\"$src\\" -o \\"/tmp/a.ii\\""\n'
                f'echo "#\\$ {cpp} -D__VIEW__=1 -E -x c++ \\"$src\\" -o \\"/tmp/b.ii\\""\n')
    for tool in (cpp, nvcc):
        os.chmod(tool, 0o755)
    build = os.path.join(root, "build")
    os.makedirs(build)
    with open(os.path.join(build, "build.ninja"), "w") as f:
        f.write(f"nvcc = {nvcc}\ncuda_cflags = -O2\ncuda_post_cflags = -c\n")
    original, device = os.path.join(build, "cuda.cu"), os.path.join(build, "cuda.kwb-device.cu")
    for path in (original, device):
        with open(path, "w") as f:
            f.write("#include <stdio.h>\n__global__ void k() {}\n")
    return build, original, device


def _runs(root):
    """(niceness, pid) of each stand-in preprocessing so far."""
    with open(os.path.join(root, "runs")) as f:
        return [tuple(int(w) for w in line.split()) for line in f]


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _any_alive(pids, seconds=10):
    """Whether any of pids is still running after `seconds` (a process a SIGKILL has reached is not
    gone at once: only this test's waited-for children are)."""
    import time
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)
    return False


def torch_views_read_ahead():
    import shutil
    import tempfile
    import time
    import extension_cache as ec
    if ec._TorchViews.NICE is None:
        print("  (no `nice` on PATH: the views are read at need only; not tested)")
        return
    base = tempfile.mkdtemp(prefix="kwb-views-test-")
    tempfile.tempdir = base  # the readings' own folders where this case can see them

    def left_in_tmp():
        return [d for d in os.listdir(base) if d.startswith("kwb-torch-views-")]
    try:
        # Read ahead and done before they are needed: nothing run again, and their scans read ahead
        # too. (Waited for, not slept on: niced, they run only where a core is idle.)
        root = tempfile.mkdtemp(prefix="case-")
        build, original, device = _stand_in_toolchain(root, 0)
        views = ec._TorchViews(build, original, device, ahead=True)
        assert views._finished.wait(120), "the reading ahead did not end"
        deadline = time.monotonic() + 120
        while not (views._views and all(v.scanned() for v in views._views)) and time.monotonic() < deadline:
            time.sleep(0.05)
        got = views.views()
        assert len(got) == 2 and all(v.mentions("declared_at_file_scope") and v.own_macros == {"OWN": "1"} for v in got), \
            [(v.text, v.own_macros) for v in got]
        assert sorted(n for n, _ in _runs(root)) == [19] * 4, _runs(root)  # 2 views, the probe's and the unit's
        assert all(v.scanned() and v._macros is not None for v in got)
        assert "declared_at_file_scope" in got[0].declarations().visible_at_file_scope()
        assert os.path.exists(os.path.join(build, ec._TorchViews.PROBE))
        views.stop()
        assert not os.path.exists(os.path.join(build, ec._TorchViews.PROBE))
        assert not left_in_tmp(), left_in_tmp()

        # Needed before they are done: each started again at normal priority, the first to end read
        # (here the normal ones: the niced ones would sleep 60 s), the others ended.
        root = tempfile.mkdtemp(prefix="case-")
        build, original, device = _stand_in_toolchain(root, 60, 0)
        views = ec._TorchViews(build, original, device, ahead=True)
        t0 = time.monotonic()
        got = views.views()
        assert len(got) == 2 and time.monotonic() - t0 < 50, (len(got), time.monotonic() - t0)
        assert sorted(n for n, _ in _runs(root)).count(0) == 4, _runs(root)
        assert not any(v._scans for v in got)  # needed: nothing read ahead, the verdict asks
        views.stop()
        assert not _any_alive([pid for _, pid in _runs(root)]), _runs(root)

        # Not ahead (no reading started with ninja): normal priority from the start.
        root = tempfile.mkdtemp(prefix="case-")
        build, original, device = _stand_in_toolchain(root, 0.1)
        views = ec._TorchViews(build, original, device, ahead=False)
        assert len(views.views()) == 2 and sorted(n for n, _ in _runs(root)) == [0] * 4, _runs(root)
        views.stop()

        # Stopped while they run (the device unit built): every process ended, nothing left.
        root = tempfile.mkdtemp(prefix="case-")
        build, original, device = _stand_in_toolchain(root, 60)
        views = ec._TorchViews(build, original, device, ahead=True)
        deadline = time.monotonic() + 120
        while (not os.path.exists(os.path.join(root, "runs")) or len(_runs(root)) < 4) and time.monotonic() < deadline:
            time.sleep(0.05)
        views.stop()
        assert views.stopped_unread() and len(_runs(root)) == 4, _runs(root)
        assert not _any_alive([pid for _, pid in _runs(root)]), _runs(root)
        assert not os.path.exists(os.path.join(build, ec._TorchViews.PROBE))
        assert not left_in_tmp(), left_in_tmp()

        # A preprocessing that fails: the reading says so, in the preprocessor's words.
        root = tempfile.mkdtemp(prefix="case-")
        build, original, device = _stand_in_toolchain(root, 0)
        with open(original, "w") as f:
            f.write("#error stop\n")
        views = ec._TorchViews(build, original, device, ahead=True)
        try:
            views.views()
            raise AssertionError("a failed preprocessing gave views")
        except ValueError as e:
            assert "a preprocessing of the probe view" in str(e) and "#error stop" in str(e), str(e)
        views.stop()
        assert not left_in_tmp(), left_in_tmp()
    finally:
        tempfile.tempdir = None
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    failed = 0
    for case in (scan_finds_namespace_scope_names, scan_gives_up_on_unbalanced_text, rules_claim_what_torch_cannot_mend,
                 rules_leave_the_rest_to_the_whole_build, launchers_are_set_off_under_their_own_file, directives_only_keeps_lines,
                 ninjas_failed_lines_of_either_version, scans_at_once_as_one_by_one, torch_views_read_ahead):
        try:
            case()
            print(f"PASS {case.__name__}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL {case.__name__}: {e}")
    sys.exit(1 if failed else 0)
