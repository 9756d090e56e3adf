// The GPU's quiet lock (src/worker/measure/gpuquietlock.h): flock on a file, held exclusively by a
// measurement and shared by a warm-up. Each check takes a second descriptor of the same file, as
// another worker process would (flock locks belong to the open file, not the process).
#include "tempfile.h"
#include "worker/measure/gpuquietlock.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <optional>
#include <string>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

using kwb::GpuQuietLock;

namespace {

/// A lock file of the test's own, there for its whole scope.
struct LockFile : kwb::test::TempFile
{
    LockFile()
        : TempFile("kwb-quiet-lock-test")
    {
        REQUIRE_FALSE(path.empty());
    }
};

/// Whether a non-blocking flock of `mode` on a fresh descriptor of `path` is granted now.
bool grantedNow(const std::string& path, int mode)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const bool granted = ::flock(fd, mode | LOCK_NB) == 0;
    if (!granted)
        CHECK(errno == EWOULDBLOCK);
    ::close(fd);
    return granted;
}

/// Makes a file beside the lock (its intent or turn file), empty, as the supervisor does.
void makeBeside(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    ::close(fd);
}

} // namespace

TEST_CASE("an exclusive hold keeps a shared one out, and a shared hold an exclusive one")
{
    LockFile file;
    GpuQuietLock lock(file.path);
    REQUIRE(lock.usable());
    CHECK(lock.error().empty());
    CHECK(lock.path() == file.path);
    {
        const GpuQuietLock::Hold exclusive(&lock, GpuQuietLock::Mode::Exclusive);
        CHECK(exclusive.held());
        CHECK_FALSE(grantedNow(file.path, LOCK_SH));
        CHECK_FALSE(grantedNow(file.path, LOCK_EX));
    }
    CHECK(grantedNow(file.path, LOCK_SH)); // released at the end of its scope
    {
        const GpuQuietLock::Hold shared(&lock, GpuQuietLock::Mode::Shared);
        CHECK(shared.held());
        CHECK_FALSE(grantedNow(file.path, LOCK_EX));
        CHECK(grantedNow(file.path, LOCK_SH)); // warm-ups go on beside one another
    }
    CHECK(grantedNow(file.path, LOCK_EX));
}

TEST_CASE("a hold measures how long it waited for the lock")
{
    LockFile file;
    GpuQuietLock measuring(file.path), warming(file.path); // two workers' descriptors
    REQUIRE(measuring.usable());
    REQUIRE(warming.usable());
    std::atomic<bool> started{false};
    double waitedMs = -1;
    bool held = false;
    std::chrono::steady_clock::time_point granted;
    std::optional<GpuQuietLock::Hold> shared;
    shared.emplace(&warming, GpuQuietLock::Mode::Shared);
    REQUIRE(shared->held());
    CHECK(shared->waitMs() >= 0);
    std::thread timing([&] {
        started = true;
        const GpuQuietLock::Hold exclusive(&measuring, GpuQuietLock::Mode::Exclusive);
        granted = std::chrono::steady_clock::now();
        waitedMs = exclusive.waitMs();
        held = exclusive.held();
    });
    while (!started)
        std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto released = std::chrono::steady_clock::now();
    shared.reset();
    timing.join();
    CHECK(held);
    CHECK(granted >= released); // it waited for the shared hold to end
    CHECK(waitedMs > 0);
    // It was waiting before the sleep began (less the moment between `started` and its flock).
    CHECK(waitedMs >= 200);
}

// Writers first (the intent file): while a measurement waits for the lock, a new shared hold
// waits behind it instead of joining the shared holds already there; without the intent file a
// shared hold joins at once (readers first, as flock alone is).
TEST_CASE("a waiting exclusive hold keeps new shared holds out where the intent file exists")
{
    for (const bool withIntent : {true, false}) {
        CAPTURE(withIntent);
        LockFile file;
        const std::string intent = GpuQuietLock::intentPath(file.path);
        if (withIntent)
            makeBeside(intent);
        GpuQuietLock warmA(file.path), timing(file.path), warmB(file.path);
        CHECK(warmA.writersFirst() == withIntent);
        std::optional<GpuQuietLock::Hold> first;
        first.emplace(&warmA, GpuQuietLock::Mode::Shared);
        REQUIRE(first->held());
        using Clock = std::chrono::steady_clock;
        std::atomic<bool> timingAsked{false};
        Clock::time_point timingGranted, timingReleased, secondGranted;
        std::thread measuring([&] {
            timingAsked = true;
            const GpuQuietLock::Hold exclusive(&timing, GpuQuietLock::Mode::Exclusive);
            timingGranted = Clock::now();
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            timingReleased = Clock::now();
        });
        while (!timingAsked)
            std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the timing waits now
        std::thread warming([&] {
            const GpuQuietLock::Hold second(&warmB, GpuQuietLock::Mode::Shared);
            secondGranted = Clock::now();
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const Clock::time_point firstReleased = Clock::now();
        first.reset();
        measuring.join();
        warming.join();
        CHECK(timingGranted >= firstReleased);
        if (withIntent)
            CHECK(secondGranted >= timingReleased); // behind the waiting timing
        else
            CHECK(secondGranted < firstReleased); // joined the shared hold: the timing waited on
        if (withIntent)
            ::unlink(intent.c_str());
    }
}

// The timing's intent announced ahead (GpuQuietLock::Intent, from the last correctness trial):
// from then on no new shared hold starts, one running goes on; the same lock's exclusive hold passes
// the gate at once and opens it once it has the lock; the end of the Intent's scope opens it too.
TEST_CASE("an announced intent keeps new shared holds out until its own exclusive hold has the lock")
{
    LockFile file;
    const std::string intent = GpuQuietLock::intentPath(file.path);
    makeBeside(intent);
    GpuQuietLock timing(file.path), warm(file.path);
    REQUIRE(timing.writersFirst());
    std::optional<GpuQuietLock::Hold> running;
    running.emplace(&warm, GpuQuietLock::Mode::Shared); // a part already running
    {
        const GpuQuietLock::Intent announced(&timing);
        CHECK(announced.waitMs() >= 0);
        CHECK_FALSE(grantedNow(intent, LOCK_SH)); // a new part would wait at the gate
        CHECK(grantedNow(file.path, LOCK_SH));    // the lock itself is untouched
        running.reset();                          // the running part ends meanwhile
        {
            const GpuQuietLock::Hold exclusive(&timing, GpuQuietLock::Mode::Exclusive);
            CHECK(exclusive.held());
            CHECK(exclusive.waitMs() < 100);    // no wait at its own gate
            CHECK(grantedNow(intent, LOCK_SH)); // opened once it had the lock
            CHECK_FALSE(grantedNow(file.path, LOCK_SH));
        }
    }
    CHECK(grantedNow(intent, LOCK_EX));
    {
        const GpuQuietLock::Intent announced(&timing); // an evaluation that stops before its timing
        CHECK_FALSE(grantedNow(intent, LOCK_SH));
    }
    CHECK(grantedNow(intent, LOCK_SH));
    // Without a gate (no intent file) it holds nothing.
    LockFile other;
    GpuQuietLock noGate(other.path);
    const GpuQuietLock::Intent none(&noGate);
    CHECK(none.waitMs() == 0);
    CHECK(grantedNow(other.path, LOCK_EX));
    ::unlink(intent.c_str());
}

// Two evaluations on one GPU (the queue's two slots): each holds the lock shared for its GPU work
// outside measurements. The first to announce its timing takes the gate; the second's announcement,
// made while it shares the GPU, is refused at once instead of waiting (its holder waits for this
// very share: a deadlock). The first's timing lets its share go, waits for the second's, and has
// the GPU alone; the second's share asked again waits until that timing ends.
TEST_CASE("two evaluations sharing the GPU: an intent refused at once, a timing that waits only for the share")
{
    LockFile file;
    const std::string intent = GpuQuietLock::intentPath(file.path);
    makeBeside(intent);
    GpuQuietLock a(file.path), b(file.path);
    std::optional<GpuQuietLock::Hold> shareA, shareB;
    shareA.emplace(&a, GpuQuietLock::Mode::Shared);
    shareB.emplace(&b, GpuQuietLock::Mode::Shared);
    CHECK(shareA->held());
    CHECK(shareB->held());
    std::optional<GpuQuietLock::Intent> intentA;
    intentA.emplace(&a, false);
    CHECK(intentA->held());
    const auto t0 = std::chrono::steady_clock::now();
    const GpuQuietLock::Intent intentB(&b, false);
    CHECK_FALSE(intentB.held());
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500)); // refused, not waited
    std::atomic<bool> timing{false}, timed{false};
    std::thread timingA([&] {
        shareA.reset(); // measureGpu: the share goes before the exclusive hold
        const GpuQuietLock::Hold exclusive(&a, GpuQuietLock::Mode::Exclusive);
        CHECK(exclusive.held());
        timing = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        timed = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK_FALSE(timing.load()); // B's correctness still shares the GPU
    shareB.reset();             // B's GPU work before its own timing ends
    while (!timing)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const GpuQuietLock::Hold againB(&b, GpuQuietLock::Mode::Shared); // B's trace, or its timing's turn
    CHECK(timed.load());                                             // granted only once A's timing had ended
    timingA.join();
    intentA.reset();
    ::unlink(intent.c_str());
}

TEST_CASE("the evaluations' turn: the next one's GPU work starts once this one is measured, a spare's warm any time")
{
    LockFile file;
    const std::string turnFile = GpuQuietLock::turnPath(file.path);
    {
        GpuQuietLock without(file.path); // no turn file (an older supervisor): a no-op
        CHECK_FALSE(without.turns());
        const GpuQuietLock::Turn none(&without);
        CHECK_FALSE(none.held());
        CHECK(none.waitMs() == 0);
    }
    makeBeside(turnFile);
    GpuQuietLock a(file.path), b(file.path), spare(file.path);
    CHECK(a.turns());
    // A: its turn, then its share (the evaluation's GPU work before the timing)
    std::optional<GpuQuietLock::Turn> turnA;
    turnA.emplace(&a);
    REQUIRE(turnA->held());
    std::optional<GpuQuietLock::Hold> shareA;
    shareA.emplace(&a, GpuQuietLock::Mode::Shared);
    // B asks for its turn meanwhile, holding nothing (it never waits for the turn holding a share)
    std::atomic<bool> bHasTurn{false};
    double bWaited = 0;
    std::thread evaluationB([&] {
        const GpuQuietLock::Turn turnB(&b);
        CHECK(turnB.held());
        bWaited = turnB.waitMs();
        bHasTurn = true;
        const GpuQuietLock::Hold shareB(&b, GpuQuietLock::Mode::Shared); // B's correctness
        CHECK(shareB.held());
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK_FALSE(bHasTurn.load());
    {
        // A spare's warm part takes no turn: it shares the GPU beside A's correctness as before
        const GpuQuietLock::Hold warmPart(&spare, GpuQuietLock::Mode::Shared);
        CHECK(warmPart.held());
    }
    shareA.reset(); // A's timing: exclusive, B still waiting for its turn, not for the lock
    {
        const GpuQuietLock::Hold timingA(&a, GpuQuietLock::Mode::Exclusive);
        CHECK(timingA.held());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        CHECK_FALSE(bHasTurn.load());
    }
    turnA->release(); // measured: B's GPU work may start beside A's trace
    CHECK_FALSE(turnA->held());
    const GpuQuietLock::Hold traceA(&a, GpuQuietLock::Mode::Shared);
    evaluationB.join();
    CHECK(bHasTurn.load());
    CHECK(bWaited >= 140);
    ::unlink(turnFile.c_str());
}

TEST_CASE("no lock, or one that cannot be opened: every hold is a no-op, and the error says why")
{
    const GpuQuietLock::Hold none(nullptr, GpuQuietLock::Mode::Exclusive);
    CHECK_FALSE(none.held());
    CHECK(none.waitMs() == 0);
    CHECK(none.error().empty());

    const std::string missing = "/nonexistent-kwb-dir/gpu0.quiet";
    GpuQuietLock lock(missing);
    CHECK_FALSE(lock.usable());
    CHECK(lock.error().find(missing) != std::string::npos);
    CHECK(lock.error().find("No such file or directory") != std::string::npos);
    const GpuQuietLock::Hold hold(&lock, GpuQuietLock::Mode::Shared);
    CHECK_FALSE(hold.held());
    CHECK(hold.waitMs() == 0);
}
