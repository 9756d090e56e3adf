#include "parent_watch.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <poll.h>
#include <sys/prctl.h>
#include <thread>
#include <unistd.h>

namespace kwb {

void watchParent()
{
    const pid_t parent = ::getppid();
    // Fires when the thread that forked us exits (kwb starts workers from its main thread); the
    // poll below also covers a parent whose forking thread lives on elsewhere, and the window
    // before this call (then getppid() already differs). A parent that died even before the
    // first getppid() left our stdin at EOF: the worker ends when it next reads.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
        ::raise(SIGKILL);
    std::thread([parent] {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            if (::getppid() != parent)
                ::raise(SIGKILL); // the whole process, whichever thread is busy
        }
    }).detach();
}

void watchInputHangup(int fd)
{
    ::signal(SIGHUP, SIG_DFL);
    std::thread([fd] {
        for (;;) {
            // No POLLIN: unread requests are the main thread's and must not wake this loop.
            // POLLHUP, POLLERR and POLLNVAL are reported whatever is asked.
            pollfd entry{fd, POLLRDHUP, 0};
            const int ready = ::poll(&entry, 1, -1);
            if (ready < 0 && errno == EINTR)
                continue;
            if (ready < 0 || (entry.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)))
                ::raise(SIGKILL); // the connection is gone: nobody can read an answer
        }
    }).detach();
}

} // namespace kwb
