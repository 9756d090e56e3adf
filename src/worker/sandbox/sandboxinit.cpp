#include "worker/sandbox/sandboxinit.h"
#include "worker/sandbox/parentwatch.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kwb {

namespace {

#if defined(__x86_64__)
constexpr unsigned kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kAuditArch = AUDIT_ARCH_AARCH64;
#else
#error "the sandbox's seccomp filter knows x86-64 and aarch64"
#endif

// seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (little-endian: the low word first).
constexpr unsigned kNr = 0;
constexpr unsigned kArch = 4;
constexpr unsigned argLow(unsigned i)
{
    return 16 + 8 * i;
}
constexpr unsigned argHigh(unsigned i)
{
    return 20 + 8 * i;
}

sock_filter load(unsigned offset)
{
    return BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset);
}
sock_filter ret(unsigned value)
{
    return BPF_STMT(BPF_RET | BPF_K, value);
}
sock_filter jumpIfEqual(unsigned k, unsigned char yes, unsigned char no)
{
    return BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, yes, no);
}
sock_filter jumpIfAtLeast(unsigned k, unsigned char yes, unsigned char no)
{
    return BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, k, yes, no);
}

constexpr unsigned kAllow = SECCOMP_RET_ALLOW;
constexpr unsigned kDeny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
constexpr unsigned kKill = SECCOMP_RET_KILL_PROCESS;

// Appends "if nr == syscall: block" (the block ends in returns, so no jump leaves it).
void onSyscall(std::vector<sock_filter>& p, long syscall, const std::vector<sock_filter>& block)
{
    p.push_back(load(kNr));
    p.push_back(jumpIfEqual(unsigned(syscall), 0, (unsigned char)block.size()));
    p.insert(p.end(), block.begin(), block.end());
}

// What the filter refuses (EPERM), everything else being allowed:
// - exit and exit_group with a status (its low byte) of kWorkerLowestReservedExitCode or more;
// - setrlimit and prlimit64 setting RLIMIT_CPU or RLIMIT_RTTIME, whose hard limits the kernel
//   enforces with SIGKILL;
// and a system call of another ABI (x32 numbers, another arch) kills the process (SIGSYS: a crash).
std::vector<sock_filter> filterProgram()
{
    std::vector<sock_filter> p;
    p.push_back(load(kArch));
    p.push_back(jumpIfEqual(kAuditArch, 1, 0));
    p.push_back(ret(kKill));
#if defined(__x86_64__)
    p.push_back(load(kNr));
    p.push_back(jumpIfAtLeast(0x40000000u, 0, 1)); // __X32_SYSCALL_BIT
    p.push_back(ret(kKill));
#endif
    const std::vector<sock_filter> exitBlock{
        load(argLow(0)),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xff),
        jumpIfAtLeast(unsigned(kWorkerLowestReservedExitCode), 0, 1),
        ret(kDeny),
        ret(kAllow),
    };
    onSyscall(p, SYS_exit_group, exitBlock);
    onSyscall(p, SYS_exit, exitBlock);
#ifdef SYS_setrlimit
    onSyscall(p, SYS_setrlimit,
              {
                  load(argLow(0)),
                  jumpIfEqual(RLIMIT_CPU, 2, 0),
                  jumpIfEqual(RLIMIT_RTTIME, 1, 0),
                  ret(kAllow),
                  ret(kDeny),
              });
#endif
    // The session keyring kwb was started in (a login's, a desktop's) is inherited through bwrap:
    // its keys are not the candidate's to read.
    for (const long call : {long(SYS_keyctl), long(SYS_add_key), long(SYS_request_key)})
        onSyscall(p, call, {ret(kDeny)});
    onSyscall(p, SYS_prlimit64,
              {
                  load(argLow(1)),
                  jumpIfEqual(RLIMIT_CPU, 1, 0),
                  jumpIfEqual(RLIMIT_RTTIME, 0, 4),
                  load(argLow(2)), // the new limit: NULL only reads
                  jumpIfEqual(0, 0, 3),
                  load(argHigh(2)),
                  jumpIfEqual(0, 0, 1),
                  ret(kAllow),
                  ret(kDeny),
              });
    p.push_back(ret(kAllow));
    return p;
}

// Every descendant of this process, breadth-first (bounded: a fork bomb is killed in rounds).
std::vector<long> descendants()
{
    std::vector<long> tree{long(::getpid())};
    for (std::size_t i = 0; i < tree.size() && tree.size() < 65536; ++i)
        for (const long child : childrenOf(tree[i], true))
            tree.push_back(child);
    tree.erase(tree.begin());
    return tree;
}

} // namespace

bool isSandboxInit()
{
    return ::getpid() == 1;
}

namespace {

bool installFilter(const std::vector<sock_filter>& program)
{
    sock_fprog prog{(unsigned short)program.size(), const_cast<sock_filter*>(program.data())};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0;
}

} // namespace

void closeInheritedDescriptors()
{
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, 3u, ~0u, 0u) == 0)
        return;
#endif
    // Older kernels: each open descriptor above 2, from /proc/self/fd (read whole first).
    std::vector<int> open;
    if (DIR* dir = ::opendir("/proc/self/fd")) {
        const int own = ::dirfd(dir);
        while (const dirent* entry = ::readdir(dir)) {
            const int fd = std::atoi(entry->d_name);
            if (fd > 2 && fd != own)
                open.push_back(fd);
        }
        ::closedir(dir);
    }
    for (const int fd : open)
        ::close(fd);
}

const char* denyKeyrings()
{
    std::vector<sock_filter> p;
    for (const long call : {long(SYS_keyctl), long(SYS_add_key), long(SYS_request_key)})
        onSyscall(p, call, {ret(kDeny)});
    p.push_back(ret(kAllow));
    return installFilter(p) ? "" : "cannot install the seccomp filter";
}

const char* setUpSandboxInit()
{
    // Orphans of whatever this process starts are re-parented here, not to init: they stay
    // descendants, and endCandidateProcesses() finds them.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (!isSandboxInit())
        return "";
    // abort() cannot end a PID 1 by SIGABRT (a signal it sends itself): glibc then faults, and the
    // death reads as SIGSEGV. Said on stderr first, so the crash is not misread.
    struct sigaction onAbort
    {};
    onAbort.sa_handler = [](int) {
        static const char line[] = "kwb-worker: abort() called; in the OS sandbox it ends the worker as SIGSEGV\n";
        (void)!::write(2, line, sizeof line - 1);
    };
    sigemptyset(&onAbort.sa_mask);
    ::sigaction(SIGABRT, &onAbort, nullptr);
    return installFilter(filterProgram()) ? "" : "cannot install the seccomp filter";
}

int endCandidateProcesses()
{
    int killed = 0;
    // A few rounds: a process may fork between the scan and its kill; each round's survivors'
    // children are found in the next.
    for (int round = 0; round < 20; ++round) {
        const std::vector<long> tree = descendants();
        if (tree.empty())
            break;
        for (const long pid : tree)
            if (::kill(pid_t(pid), SIGKILL) == 0)
                ++killed;
        // Reap what died (our children, re-parented orphans among them).
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
        for (;;) {
            int status = 0;
            const pid_t reaped = ::waitpid(-1, &status, WNOHANG | __WALL);
            if (reaped > 0)
                continue;
            if (reaped < 0 && errno == ECHILD)
                break;
            if (std::chrono::steady_clock::now() > until)
                break;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    return killed;
}

} // namespace kwb
