#pragma once
// The worker's duties inside the OS sandbox (docs/sandbox.md, "The OS sandbox"). There the worker
// is PID 1 of its own PID namespace (bwrap --unshare-pid --as-pid-1), which the kernel protects:
// a signal sent from inside the namespace (the candidate's code, any process it starts) reaches
// PID 1 only where PID 1 has a handler (it has none), and SIGKILL never does; a fault (SIGSEGV,
// SIGBUS, …) still ends it. Only a process outside the sandbox (kwb, the user, the kernel's OOM
// killer) can kill the worker with a signal. Two more routes would let a candidate fake such a
// death, and a seccomp filter closes them: an exit code of 128 or more (bwrap reports a death by
// signal N as exit code 128 + N), and lowering its own RLIMIT_CPU/RLIMIT_RTTIME (the kernel then
// sends SIGKILL itself). So a sandboxed worker that died by SIGKILL was killed from outside, the
// machine's failure (`worker_lost`); every other end during a request is the candidate's
// (`crashed`). kwb stops a sandboxed worker with SIGKILL (SIGTERM does not reach PID 1). The
// filter also refuses the keyring calls: the session keyring kwb was started in is inherited.

namespace kwb {

/// The lowest exit code a sandboxed worker (and every process it starts) cannot exit with:
/// bwrap's 128 + N for a death by signal N.
constexpr int kWorkerLowestReservedExitCode = 128;

/// Call first in main. Everywhere: makes this process the subreaper of everything it starts, so
/// orphans of a candidate's processes stay its descendants (endCandidateProcesses() finds them).
/// As PID 1 (the sandbox): installs the seccomp filter above. Returns "" or what could not be
/// set up (the worker goes on; it says so on stderr).
const char* setUpSandboxInit();

/// Closes every descriptor above stderr that the process was started with: bwrap passes on what
/// kwb's process leaked (QProcess does not close them), and one may be a file the candidate must
/// not read. First thing in main, before anything opens its own.
void closeInheritedDescriptors();

/// The extension builder's one filter (it runs no answer code, but the build's commands are the
/// answer's): keyctl, add_key and request_key refused, as in the worker's.
const char* denyKeyrings();

/// True when this process is PID 1 of its namespace (in the sandbox).
bool isSandboxInit();

/// SIGKILLs every descendant of this process and reaps them, so nothing a candidate started
/// outlives its evaluation (double forks and setsid included: they are re-parented to us, the
/// subreaper). Returns how many processes it killed. Called after each request, before answering.
int endCandidateProcesses();

} // namespace kwb
