#include "parent_watch.hpp"

#include <chrono>
#include <csignal>
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

} // namespace kwb
