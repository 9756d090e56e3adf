#pragma once
// The worker ends when the process that started it dies, whatever its own threads are doing: a
// worker left busy in a long evaluation after `kill -9` of kwb must not run on (or hold the GPU)
// as an orphan.

namespace kwb {

/// Arms PR_SET_PDEATHSIG (SIGKILL) and starts a detached watchdog thread that polls getppid()
/// every 200 ms and SIGKILLs this process once it changes (re-parenting to init or a
/// subreaper). Call first thing in main; always on.
void watchParent();

} // namespace kwb
