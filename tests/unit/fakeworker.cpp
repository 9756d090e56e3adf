// A stand-in for kwb-worker that misbehaves on request, so the supervisor's time-outs, restarts
// and limits are tested on any machine (no GPU, no libtorch). It speaks docs/protocol.md, reading
// requests with std::getline and writing with stdio: QtCore only for JSON, no event loop, so it
// behaves like the real worker does while a kernel runs (it does not read its input).
//
// Its answers are the recorded whole responses of tests/protocol/recorded/ (README there: real
// H200 and CPU worker responses), with the request's id, type and the fields below put in, so
// what the tests see has the real worker's shape and cannot drift from it. The folder is baked in
// (KWB_PROTOCOL_RECORDED_DIR); --recorded DIR or $FAKEWORKER_RECORDED_DIR overrides it.
//
// What it does with a request is its "mode": the request's "fake" field, else a marker
// "fake: MODE" in an evaluate request's answer (so `kwb eval` can be tested with a candidate
// file), else --mode / $FAKEWORKER_MODE, else "answer". Modes:
//   answer            the recorded response for the request's type (with "pid")
//   slow              answer after "delay_ms" (default 300) milliseconds; "delay_ms_on_N" overrides
//                     it for a worker whose CUDA_VISIBLE_DEVICES is N (both fields or answer markers)
//   hang              never answer
//   hang_ignore_term  ignore SIGTERM, never answer (only SIGKILL ends it)
//   abort / segv      die by SIGABRT / SIGSEGV
//   sigkill           die by SIGKILL, as if killed from outside (the OOM killer)
//   self_kill         as a candidate's code could: SIGKILL to itself, to PID 1 and to every process
//                     it may signal, then answer (in the OS sandbox the worker, PID 1, survives)
//   exit_137          _exit(137), as a death by SIGKILL reads through bwrap (the sandbox's seccomp
//                     filter refuses it: the process faults instead)
//   sigkill_once      like sigkill when the file $FAKEWORKER_ONCE does not exist (it creates it), else answer
//   hang_once         like hang, the same first time only, else answer
//   oom_once          the first time only (as sigkill_once), a runtime_error "CUDA out of memory", else answer
//   oom               that runtime_error every time; both with gpu_memory.out_of_memory, torch's
//                     allocator's report (4 GiB asked for, 1 GiB of 80 free, bus 0000:19:00.0),
//                     unless the request's "fake_gpu_memory" says otherwise
//   exit              exit with code 3 without answering
//   flood             write "flood_bytes" (default 5 MiB) to stderr, then answer
//   broken            write a line that is not JSON
//   huge_line         write more than 16 MiB without a newline
//   unhealthy         answer with "worker_healthy": false, then exit 0 (a sticky CUDA error)
//   wrong_id          answer with another request's id
//   alloc             allocate and touch "mib" MiB of host memory (default 256), then answer
//   threads           start "count" sleeping threads (default 16), then answer
//   write             try to create the file "path" (default $TMPDIR/fake-write), answer with
//                     "write_errno" (0: written) and "write_error"
//   stat, read        whether "path" exists ("exists"), and its first 4 KiB ("text")
//   connect           try a TCP connection to 127.0.0.1:"port", answer with "connect_errno" (0:
//                     connected) and "connect_error"
// alloc and threads hang instead of answering when "then" is "hang". In an evaluate request the
// answer's markers "mib: N", "count: N" and "then: hang" stand for the fields.
// A request of type "env" (not in the protocol) answers {"environment": {NAME: VALUE, …},
// "arguments": [its command line after the program]}.
// Handshake options: --protocol N or $FAKEWORKER_PROTOCOL (the version hello states, default 1);
// --hello MODE, MODE one of answer, hang, segv, exit_127 (prints a loader error and exits 127 at
// start, like a worker whose libtorch is missing); --hello-delay MS or $FAKEWORKER_HELLO_DELAY_MS
// (sleep before answering hello, like the real worker loading libtorch).
// --gpu-quiet-lock PATH: as kwb-worker, the GPU's quiet lock (docs/protocol.md), opened read-only
// at start; hello then says "gpu_quiet_lock": PATH, or null with "gpu_quiet_lock_error" when it
// cannot be opened (so tests see that the file existed before the worker started, in the sandbox
// too). `warm` (the spare's warm-up) "warms" for --warm-delay MS or $FAKEWORKER_WARM_DELAY_MS,
// and while the file $FAKEWORKER_WARM_GATE (when set; "{pid}" in it is replaced by the worker's pid)
// does not exist (a second warm at once), then
// answers by --warm MODE or $FAKEWORKER_WARM: answer (default: it warmed holding LOCK_SH on the
// lock, and says warm_ms {quiet_wait, context (the warming), cublas, cudnn, evaluator, total});
// unknown_type (an older worker: warm is unknown_type, and hello says nothing of the lock);
// garbage (a line that is not JSON); fail (ok: false with the code "internal"). `compile` answers the recorded compile
// with a fake cubin (ok_compile false when the source holds "compile_error"); with `answer` it compiles the cuda block
// of its `candidate` echo (candidateOf: the recorded echo for a recorded answer, else a test-only stand-in rule) and
// answers a torch-only answer as the worker does (recorded compile_no_cuda: ok_compile false, no hash); evaluate
// responses carry that echo too; an evaluate's response says whether it carried one ("cubin_received", and
// compile.cached). Every response carries "pid", "cuda_visible_devices" (null when unset), "started_ms" (when the
// process started), "received_ms" and "answered_ms" (epoch milliseconds) and "requests_seen" (lines read so far, hello
// included), so tests can see which process served what, and when. A compile request's mode may come from a marker
// "nvrtc: MODE" in its source (or answer). With $FAKEWORKER_LOG set, every worker appends a line
// {"pid","type","cuda_visible_devices","ms","keys"} per request read to that file, so tests see requests whose
// responses they never get (a spare's hello, compile-ahead). Evaluate answers take their status from a marker "status:
// NAME" in the answer (default correct; a marker "speedup: X" sets the speed-up): the recorded evaluate of that status,
// else the recorded incorrect one with that status put in, with the request's task and profile name and the request
// itself under "echo". It knows the tasks with a recorded analyze, L1/1 and L2/1 (`tasks` lists those of the recorded
// response); analyze of another answers unknown_task, profile of a task without a recorded profile no_device; device
// answers the recorded H200 (with ceilings when asked) or, when $FAKEWORKER_NO_DEVICE is set, the CPU worker's "no GPU"
// (hello then says cuda_device_count 0 and a driver problem, and an evaluate without a status marker answers no_device,
// as does one with "device": "none"). $FAKEWORKER_ARCH makes device answer that arch and evaluate use a shipped cubin
// only when its cubin_arch is that arch (else compile.cached is absent: compiled here; compile.arch is that arch).
// --end-on-stdin-eof arms the real worker's stdin watchdog (src/worker/sandbox/parentwatch.cpp). $FAKEWORKER_LIST_ALL
// makes `tasks` list every recorded task (KernelBench-only ones too). Other arguments (--tasks-dir DIR) are ignored.
//
// KernelBench-format answers (a request's "answer_format" "kernelbench"), where $KWB_EXTENSION_CACHE
// holds a file fakeworker-builds (a test's folder), as the real worker treats them
// (src/worker/python/kernelbench_host.py): their extensions are built into that folder, and
// evaluate loads them from there. Here the key is a hash of the answer; `compile` builds it (no
// cubin: ok_compile, and "status" compile_error for an answer holding "compile_error"), appending
// {"key","pid","by","barrier_met"} to builds.jsonl in that folder and leaving <key>.built (or
// <key>.failed with the log: a failure is cached, as the real cache does). evaluate finds the build
// there ("compile": {"cached": true}) or builds it itself ("by": "evaluate"); a failed build is its
// compile_error with the build's log. Markers hold a build: "build_gate: NAME" until the file NAME
// exists in the folder, "build_barrier: K" until K builds with that marker have started (at most
// 20 s, then "barrier_met" false), so tests see builds that run at the same time without timing.

#include "worker/sandbox/parentwatch.h"
#include "worker/sandbox/sandboxinit.h"

#include <QByteArray>
#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QString>

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <netinet/in.h>
#include <optional>
#include <string>
#include <sys/file.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

int g_protocol = 1;
QString g_mode = QStringLiteral("answer");
QString g_helloMode = QStringLiteral("answer");
int g_helloDelayMs = 0;
QString g_warmMode = QStringLiteral("answer");
int g_warmDelayMs = 0;
bool g_warm = false;        // a warm has been answered: the next answers at once
QString g_quietLockPath;    // --gpu-quiet-lock
int g_quietLockFd = -1;     // open when it could be opened
bool g_quietIntent = false; // its <path>.intent could be opened too (the sandbox binds it)
bool g_quietTurn = false;   // its <path>.turn, likewise
QString g_quietLockError;   // why not
qint64 g_startedMs = 0;
qint64 g_receivedMs = 0;
int g_requestsSeen = 0;
int g_exitDelayMs = 0; // after stdin's EOF, before exiting: a worker's exit (its CUDA context's teardown)
// tests/protocol/recorded/, baked in at build time; --recorded DIR or $FAKEWORKER_RECORDED_DIR.
QString g_recordedDir = QStringLiteral(KWB_PROTOCOL_RECORDED_DIR);
QJsonArray g_arguments; // its command line after the program, for "env"

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

void writeLine(QJsonObject object)
{
    if (object.contains(QStringLiteral("pid")))
        object.insert(QStringLiteral("answered_ms"), nowMs());
    QByteArray line = QJsonDocument(object).toJson(QJsonDocument::Compact);
    line.append('\n');
    std::fwrite(line.constData(), 1, size_t(line.size()), stdout);
    std::fflush(stdout);
}

[[noreturn]] void hangForever()
{
    for (;;)
        ::pause();
}

[[noreturn]] void dieBy(int signal)
{
    // A sanitizer's handler would turn the signal into an exit code: take the default action.
    std::signal(signal, SIG_DFL);
    // A real fault, as a real worker's crash is: in the OS sandbox the worker is PID 1 of its
    // namespace, which a signal it sends itself does not reach (src/worker/sandbox/sandboxinit.h).
    if (signal == SIGSEGV) { // an address no process maps, read at run time (the compiler may drop a null store)
        volatile std::uintptr_t unmapped = 8;
        *reinterpret_cast<volatile int*>(std::uintptr_t(unmapped)) = 0;
    }
    std::raise(signal);
    std::_Exit(99);
}

void logRequest(const QByteArray& line)
{
    const char* path = std::getenv("FAKEWORKER_LOG");
    if (!path)
        return;
    const QJsonObject request = QJsonDocument::fromJson(line).object();
    const QJsonObject entry{
        {QStringLiteral("pid"), qint64(::getpid())},
        {QStringLiteral("type"), request.value(QStringLiteral("type"))},
        {QStringLiteral("cuda_visible_devices"), qEnvironmentVariableIsSet("CUDA_VISIBLE_DEVICES")
                                                     ? QJsonValue(qEnvironmentVariable("CUDA_VISIBLE_DEVICES"))
                                                     : QJsonValue(QJsonValue::Null)},
        {QStringLiteral("ms"), g_receivedMs},
        {QStringLiteral("keys"), QJsonArray::fromStringList(request.keys())}};
    // One short write in append mode: lines of concurrent workers do not interleave.
    const QByteArray text = QJsonDocument(entry).toJson(QJsonDocument::Compact) + '\n';
    if (std::FILE* file = std::fopen(path, "a")) {
        std::fwrite(text.constData(), 1, size_t(text.size()), file);
        std::fclose(file);
    }
}

QJsonObject envelope(const QJsonObject& request)
{
    return QJsonObject{
        {QStringLiteral("id"), request.value(QStringLiteral("id"))},
        {QStringLiteral("type"), request.value(QStringLiteral("type"))},
        {QStringLiteral("ok"), true},
        {QStringLiteral("pid"), qint64(::getpid())},
        {QStringLiteral("cuda_visible_devices"), qEnvironmentVariableIsSet("CUDA_VISIBLE_DEVICES")
                                                     ? QJsonValue(qEnvironmentVariable("CUDA_VISIBLE_DEVICES"))
                                                     : QJsonValue(QJsonValue::Null)},
        {QStringLiteral("started_ms"), g_startedMs},
        {QStringLiteral("received_ms"), g_receivedMs},
        {QStringLiteral("requests_seen"), g_requestsSeen}};
}

QJsonObject errorResponse(const QJsonObject& request, const QString& code, const QString& message)
{
    QJsonObject response = envelope(request);
    response.insert(QStringLiteral("ok"), false);
    response.insert(QStringLiteral("error"),
                    QJsonObject{{QStringLiteral("code"), code}, {QStringLiteral("message"), message}});
    return response;
}

QString marker(const QString& text, const QString& name)
{
    const QRegularExpression re(name + QStringLiteral(":\\s*([a-z_0-9]+)"));
    const QRegularExpressionMatch match = re.match(text);
    return match.hasMatch() ? match.captured(1) : QString();
}

// The recorded whole responses (tests/protocol/recorded/, README there) this fake answers with,
// read once each. A missing or broken file ends the fake with code 2: a test must not pass on a
// response nobody recorded.
QJsonObject recorded(const QString& name)
{
    static QHash<QString, QJsonObject> cache;
    const auto it = cache.constFind(name);
    if (it != cache.cend())
        return *it;
    QFile file(g_recordedDir + QLatin1Char('/') + name + QStringLiteral(".response.json"));
    const QJsonDocument document =
        file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()) : QJsonDocument();
    if (!document.isObject()) {
        std::fprintf(stderr, "fake worker: no recorded response %s\n", qPrintable(file.fileName()));
        std::_Exit(2);
    }
    return *cache.insert(name, document.object());
}

// "L2/1" -> "l2_1", as the recorded files are named.
QString fileTask(const QString& id)
{
    return id.toLower().replace(QLatin1Char('/'), QLatin1Char('_'));
}

bool isRecorded(const QString& name)
{
    return QFile::exists(g_recordedDir + QLatin1Char('/') + name + QStringLiteral(".response.json"));
}

// The tasks this fake knows (L1/1 and L2/1): those with a recorded analyze response.
bool knows(const QString& task)
{
    return !task.isEmpty() && isRecorded(QStringLiteral("analyze_%1.cpu").arg(fileTask(task)));
}

// The worker's table of protocol profiles and its default, as the golden hello
// (tests/protocol/01_hello.response.json) states them: the recorded H200 hello predates them.
QJsonObject goldenHello()
{
    static const QJsonObject hello = [] {
        QFile file(g_recordedDir + QStringLiteral("/../01_hello.response.json"));
        return file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()).object() : QJsonObject();
    }();
    return hello;
}

bool knowsProfile(const QString& name)
{
    const QJsonArray profiles = goldenHello().value(QStringLiteral("profiles")).toArray();
    if (profiles.isEmpty())
        return true; // no table to check against
    for (const QJsonValue& p : profiles)
        if (p.toObject().value(QStringLiteral("name")).toString() == name)
            return true;
    return false;
}

// A recorded response with this request's envelope (id, type, pid, times) put in.
QJsonObject fromRecorded(const QJsonObject& request, const QString& name)
{
    QJsonObject response = recorded(name);
    const QJsonObject env = envelope(request);
    for (auto it = env.begin(); it != env.end(); ++it)
        if (it.key() != QLatin1String("ok"))
            response.insert(it.key(), it.value());
    return response;
}

// "fake-<hex>": the fake's stand-in for the worker's source hash (protocol::sourceHash).
QString fakeHash(const QString& source)
{
    return QStringLiteral("fake-%1").arg(qHash(source), 0, 16);
}

// The `candidate` echo (docs/protocol.md §evaluate) of an answer, as this fake reports it. For the
// answer of the recorded request `name` it is the recorded echo (the real worker's parse). For
// any other answer it is a TEST-ONLY STAND-IN, not the candidate format: a block is the lines
// between a line that is exactly "```cuda" (or "```python") and the next line that is exactly
// "```"; no indentation, no ~~~, no nesting, no format checks; kernels are the names after
// "__global__ void ". The client code under test must take whatever this says, never parse.
QJsonObject candidateOf(const QString& answer, const QString& name)
{
    QFile requestFile(g_recordedDir + QLatin1Char('/') + name + QStringLiteral(".request"));
    if (requestFile.open(QIODevice::ReadOnly)) {
        const QJsonObject recordedRequest = QJsonDocument::fromJson(requestFile.readAll()).object();
        const QJsonObject recordedEcho = recorded(name).value(QStringLiteral("candidate")).toObject();
        if (recordedRequest.value(QStringLiteral("answer")).toString() == answer && !recordedEcho.isEmpty())
            return recordedEcho;
    }
    const QStringList lines = answer.split(QLatin1Char('\n'));
    auto block = [&lines](const QString& tag, int* firstLine) -> QJsonValue {
        const qsizetype open = lines.indexOf(QStringLiteral("```") + tag);
        if (open < 0)
            return QJsonValue::Null;
        const qsizetype close = lines.indexOf(QStringLiteral("```"), open + 1);
        if (close < 0)
            return QJsonValue::Null;
        *firstLine = int(open) + 2;
        QString text;
        for (qsizetype i = open + 1; i < close; ++i)
            text += lines.at(i) + QLatin1Char('\n');
        return text;
    };
    int cudaLine = 0, pythonLine = 0;
    const QJsonValue cuda = block(QStringLiteral("cuda"), &cudaLine);
    const QJsonValue python = block(QStringLiteral("python"), &pythonLine);
    QJsonArray kernels;
    static const QRegularExpression kernel(QStringLiteral("__global__\\s+void\\s+(\\w+)"));
    for (auto it = kernel.globalMatch(cuda.toString()); it.hasNext();)
        kernels.append(it.next().captured(1));
    auto lineOrNull = [](int line) { return line > 0 ? QJsonValue(line) : QJsonValue(QJsonValue::Null); };
    return QJsonObject{{QStringLiteral("cuda"), cuda},
                       {QStringLiteral("python"), python},
                       {QStringLiteral("kernels"), kernels},
                       {QStringLiteral("source_hash"),
                        cuda.isNull() ? QJsonValue(QJsonValue::Null) : QJsonValue(fakeHash(cuda.toString()))},
                       {QStringLiteral("cuda_line"), lineOrNull(cudaLine)},
                       {QStringLiteral("python_line"), lineOrNull(pythonLine)}};
}

QString extensionCache()
{
    return qEnvironmentVariable("KWB_EXTENSION_CACHE", QStringLiteral("/tmp/fakeworker-extensions"));
}

QString cacheFile(const QString& name)
{
    return extensionCache() + QLatin1Char('/') + name;
}

// Only in a cache folder a test made for it (holding the file fakeworker-builds): the fake never
// writes into the user's own extension cache.
bool buildsKernelBench(const QJsonObject& request)
{
    return request.value(QStringLiteral("answer_format")).toString() == QLatin1String("kernelbench") &&
           QFile::exists(cacheFile(QStringLiteral("fakeworker-builds")));
}

struct ExtensionBuild
{
    bool cached = false;
    bool failed = false;
    QString log;
};

// The build of a KernelBench answer's extension, or what the cache holds of it (see the header).
ExtensionBuild buildExtension(const QString& answerText, const QString& by)
{
    const QString key =
        QString::fromLatin1(QCryptographicHash::hash(answerText.toUtf8(), QCryptographicHash::Sha256).toHex().left(20));
    ExtensionBuild build;
    const QString failLog = QStringLiteral("fake nvcc: main.cu(3): error: identifier \"undefined_fn\" is undefined");
    if (QFile::exists(cacheFile(key + QStringLiteral(".built"))))
        return {true, false, QString()};
    if (QFile failed(cacheFile(key + QStringLiteral(".failed"))); failed.open(QIODevice::ReadOnly))
        return {true, true, QString::fromUtf8(failed.readAll())};
    bool barrierMet = true;
    if (const QString gate = marker(answerText, QStringLiteral("build_gate")); !gate.isEmpty()) {
        while (!QFile::exists(cacheFile(gate)))
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (const QString barrier = marker(answerText, QStringLiteral("build_barrier")); !barrier.isEmpty()) {
        QFile started(cacheFile(QStringLiteral("barrier-") + key));
        (void)started.open(QIODevice::WriteOnly);
        started.close();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        const auto startedCount = [] {
            return QDir(extensionCache()).entryList({QStringLiteral("barrier-*")}, QDir::Files).size();
        };
        while (startedCount() < barrier.toInt() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        barrierMet = startedCount() >= barrier.toInt();
    }
    const QByteArray entry = QJsonDocument(QJsonObject{{QStringLiteral("key"), key},
                                                       {QStringLiteral("pid"), qint64(::getpid())},
                                                       {QStringLiteral("by"), by},
                                                       {QStringLiteral("barrier_met"), barrierMet}})
                                 .toJson(QJsonDocument::Compact) +
                             '\n';
    if (std::FILE* file = std::fopen(cacheFile(QStringLiteral("builds.jsonl")).toLocal8Bit().constData(), "a")) {
        std::fwrite(entry.constData(), 1, size_t(entry.size()), file);
        std::fclose(file);
    }
    build.failed = answerText.contains(QLatin1String("compile_error"));
    build.log = build.failed ? failLog : QString();
    QFile done(cacheFile(key + (build.failed ? QStringLiteral(".failed") : QStringLiteral(".built"))));
    if (done.open(QIODevice::WriteOnly))
        done.write(build.log.toUtf8());
    return build;
}

QJsonObject answer(const QJsonObject& request)
{
    const QString type = request.value(QStringLiteral("type")).toString();
    const QString taskId = request.value(QStringLiteral("task")).toString();
    if (type == QLatin1String("hello")) {
        QJsonObject response = fromRecorded(request, QStringLiteral("hello.h200"));
        response.insert(QStringLiteral("protocol"), g_protocol);
        for (const char* key : {"profiles", "default_profile"})
            if (!response.contains(QLatin1String(key)) && goldenHello().contains(QLatin1String(key)))
                response.insert(QLatin1String(key), goldenHello().value(QLatin1String(key)));
        if (qEnvironmentVariableIsSet("FAKEWORKER_NO_DEVICE")) { // as the CPU worker's hello says it
            response.insert(QStringLiteral("cuda_device_count"), 0);
            response.insert(QStringLiteral("driver"), QStringLiteral("CUDA driver not found (fake worker)"));
        }
        response.remove(QStringLiteral("gpu_quiet_lock"));
        response.remove(QStringLiteral("gpu_quiet_lock_error"));
        if (g_warmMode != QLatin1String("unknown_type")) { // an older worker says nothing of it
            response.insert(QStringLiteral("gpu_quiet_lock"),
                            g_quietLockFd >= 0 ? QJsonValue(g_quietLockPath) : QJsonValue(QJsonValue::Null));
            response.insert(QStringLiteral("gpu_quiet_lock_writers_first"), g_quietLockFd >= 0 && g_quietIntent);
            response.insert(QStringLiteral("gpu_quiet_lock_turns"), g_quietLockFd >= 0 && g_quietTurn);
            if (!g_quietLockError.isEmpty())
                response.insert(QStringLiteral("gpu_quiet_lock_error"), g_quietLockError);
        }
        return response;
    }

    if (type == QLatin1String("compile") && buildsKernelBench(request)) {
        const ExtensionBuild build =
            buildExtension(request.value(QStringLiteral("answer")).toString(), QStringLiteral("compile"));
        QJsonObject response = fromRecorded(request, QStringLiteral("compile_no_cuda.cpu"));
        response.insert(QStringLiteral("answer_format"), QStringLiteral("kernelbench"));
        response.insert(QStringLiteral("arch"),
                        request.value(QStringLiteral("arch")).toString(QStringLiteral("sm_90")));
        response.insert(QStringLiteral("ok_compile"), !build.failed);
        response.insert(QStringLiteral("log"), build.log);
        if (build.failed)
            response.insert(QStringLiteral("status"), QStringLiteral("compile_error"));
        return response;
    }
    if (type == QLatin1String("compile")) {
        // With `answer` (compile-ahead), the cuda block is the worker's parse of it (candidateOf);
        // with `cuda`, the source as sent.
        const bool withAnswer = request.contains(QStringLiteral("answer"));
        const QJsonObject candidate = withAnswer ? candidateOf(request.value(QStringLiteral("answer")).toString(),
                                                               QStringLiteral("compile_answer.cpu"))
                                                 : QJsonObject();
        const QString source = withAnswer ? candidate.value(QStringLiteral("cuda")).toString()
                                          : request.value(QStringLiteral("cuda")).toString();
        const QString arch = request.value(QStringLiteral("arch")).toString(QStringLiteral("sm_90"));
        if (withAnswer && candidate.value(QStringLiteral("cuda")).isNull()) {
            // As the worker answers a torch-only answer: nothing compiled, no hash.
            QJsonObject response = fromRecorded(request, QStringLiteral("compile_no_cuda.cpu"));
            response.insert(QStringLiteral("arch"), arch);
            response.insert(QStringLiteral("candidate"), candidate);
            return response;
        }
        QJsonObject response =
            fromRecorded(request, withAnswer ? QStringLiteral("compile_answer.cpu") : QStringLiteral("compile.cpu"));
        const bool ok = !source.contains(QLatin1String("compile_error"));
        response.insert(QStringLiteral("ok_compile"), ok);
        response.insert(QStringLiteral("log"), ok ? QString() : QStringLiteral("kernel.cu(1): error: fake"));
        response.insert(QStringLiteral("arch"), arch);
        response.insert(QStringLiteral("source_hash"),
                        withAnswer ? candidate.value(QStringLiteral("source_hash")) : QJsonValue(fakeHash(source)));
        response.remove(QStringLiteral("cubin_b64"));
        if (ok && request.value(QStringLiteral("return_cubin")).toBool()) {
            const QByteArray cubin = "FAKECUBIN " + arch.toUtf8() + ' ' + source.toUtf8();
            response.insert(QStringLiteral("cubin_b64"), QString::fromLatin1(cubin.toBase64()));
        }
        // "kernel_facts_mib: N" in the answer: the facts carry N MiB of SASS (a request with them
        // passes the line limit).
        if (const int mib =
                marker(request.value(QStringLiteral("answer")).toString(), QStringLiteral("kernel_facts_mib")).toInt();
            mib > 0)
            response.insert(QStringLiteral("kernel_facts"),
                            QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("k")},
                                                   {QStringLiteral("sass"), QString(mib << 20, QLatin1Char('S'))}}});
        if (withAnswer) {
            response.insert(QStringLiteral("kernels"), candidate.value(QStringLiteral("kernels")));
            response.insert(QStringLiteral("candidate"), candidate);
        }
        return response;
    }
    if (type == QLatin1String("device")) {
        if (qEnvironmentVariableIsSet("FAKEWORKER_NO_DEVICE"))
            return fromRecorded(request, QStringLiteral("device_no_gpu.cpu"));
        QJsonObject response = fromRecorded(request, request.value(QStringLiteral("ceilings")).toBool()
                                                         ? QStringLiteral("device_ceilings.h200")
                                                         : QStringLiteral("device.h200"));
        if (qEnvironmentVariableIsSet("FAKEWORKER_ARCH"))
            response.insert(QStringLiteral("arch"), qEnvironmentVariable("FAKEWORKER_ARCH"));
        return response;
    }
    if (type == QLatin1String("tasks")) {
        QJsonObject response = fromRecorded(request, QStringLiteral("tasks.cpu"));
        QJsonArray known;
        // $FAKEWORKER_LIST_ALL: every recorded task (the 250, KernelBench-only ones too), not
        // only those with a recorded analyze.
        const bool all = qEnvironmentVariableIsSet("FAKEWORKER_LIST_ALL");
        for (const QJsonValue& t : response.value(QStringLiteral("tasks")).toArray())
            if (all || knows(t.toObject().value(QStringLiteral("id")).toString()))
                known.append(t);
        response.insert(QStringLiteral("tasks"), known);
        return response;
    }
    if (type == QLatin1String("analyze")) {
        if (!knows(taskId))
            return errorResponse(request, QStringLiteral("unknown_task"), QStringLiteral("no task ") + taskId);
        QJsonObject response = fromRecorded(request, QStringLiteral("analyze_%1.cpu").arg(fileTask(taskId)));
        response.insert(QStringLiteral("scale"),
                        request.value(QStringLiteral("scale")).toString(QStringLiteral("full")));
        return response;
    }
    if (type == QLatin1String("profile")) {
        const QString name = QStringLiteral("profile_%1.h200").arg(fileTask(taskId));
        if (!knows(taskId) || !isRecorded(name))
            return errorResponse(request, QStringLiteral("no_device"),
                                 QStringLiteral("fake worker: no profile recorded for ") + taskId);
        return fromRecorded(request, name);
    }
    if (type == QLatin1String("env")) {
        // Not in the protocol: what the worker's environment holds, for the supervisor's tests.
        QJsonObject response = envelope(request);
        QJsonObject environment;
        for (char** entry = environ; *entry; ++entry) {
            const QString text = QString::fromLocal8Bit(*entry);
            const qsizetype equals = text.indexOf(QLatin1Char('='));
            if (equals > 0)
                environment.insert(text.left(equals), text.mid(equals + 1));
        }
        response.insert(QStringLiteral("environment"), environment);
        response.insert(QStringLiteral("arguments"), g_arguments);
        return response;
    }
    if (type == QLatin1String("evaluate")) {
        // As the worker: a profile it does not know is refused (tests/protocol/12_unknown_profile).
        if (request.contains(QStringLiteral("profile")) &&
            !knowsProfile(request.value(QStringLiteral("profile")).toString()))
            return errorResponse(request, QStringLiteral("bad_request"),
                                 QStringLiteral("unknown profile ") +
                                     request.value(QStringLiteral("profile")).toString());
        // The status from the answer's "status: NAME" marker: its recorded response, else the
        // recorded incorrect one carrying that status.
        QString status = marker(request.value(QStringLiteral("answer")).toString(), QStringLiteral("status"));
        std::optional<ExtensionBuild> extension;
        if (buildsKernelBench(request) && request.value(QStringLiteral("device")) != QLatin1String("none")) {
            extension = buildExtension(request.value(QStringLiteral("answer")).toString(), QStringLiteral("evaluate"));
            if (extension->failed)
                status = QStringLiteral("compile_error");
        }
        // "device": "none" stops after the sandbox check, as the real worker does: nothing runs.
        if (request.value(QStringLiteral("device")) == QLatin1String("none"))
            status = QStringLiteral("no_device");
        if (status.isEmpty())
            status = qEnvironmentVariableIsSet("FAKEWORKER_NO_DEVICE") ? QStringLiteral("no_device")
                                                                       : QStringLiteral("correct");
        const QString name = QStringLiteral("evaluate_%1.h200").arg(status);
        const bool recordedStatus = isRecorded(name);
        QJsonObject response = fromRecorded(request, recordedStatus ? name : QStringLiteral("evaluate_incorrect.h200"));
        if (!recordedStatus) {
            response.insert(QStringLiteral("status"), status);
            response.insert(QStringLiteral("message"),
                            QStringLiteral("fake worker: status %1 from the answer").arg(status));
        }
        if (extension) {
            QJsonObject compile = response.value(QStringLiteral("compile")).toObject();
            compile.insert(QStringLiteral("extension_cached"), extension->cached);
            if (extension->failed) {
                compile.insert(QStringLiteral("ok"), false);
                compile.insert(QStringLiteral("log"), extension->log);
                response.insert(QStringLiteral("message"), extension->log);
            }
            response.insert(QStringLiteral("compile"), compile);
        }
        if (!taskId.isEmpty())
            response.insert(QStringLiteral("task"), taskId);
        // A "speedup: X" marker sets the speed-up (selection tests: faster and slower correct kernels).
        static const QRegularExpression speedupMarker(QStringLiteral("speedup:\\s*([0-9]+(\\.[0-9]+)?)"));
        const QRegularExpressionMatch speedup = speedupMarker.match(request.value(QStringLiteral("answer")).toString());
        if (speedup.hasMatch()) {
            const double value = speedup.captured(1).toDouble();
            const double recorded = response.value(QStringLiteral("speedup")).toDouble();
            response.insert(QStringLiteral("speedup"), value);
            // The recorded interval moves with it (the same relative width), so the two agree.
            QJsonObject timing = response.value(QStringLiteral("timing")).toObject();
            QJsonObject interval = timing.value(QStringLiteral("speedup_interval")).toObject();
            if (!interval.isEmpty() && recorded > 0) {
                for (const char* end : {"value", "low", "high"})
                    if (interval.value(QLatin1String(end)).isDouble())
                        interval.insert(QLatin1String(end),
                                        interval.value(QLatin1String(end)).toDouble() * value / recorded);
                timing.insert(QStringLiteral("speedup_interval"), interval);
                response.insert(QStringLiteral("timing"), timing);
            }
        }
        // A "traffic: per_kernel" marker adds a measured traffic record counted per kernel, the
        // recorded L2/1 kernels' as the H200 measured them (2026-12-05, tst_gpu_traffic).
        if (marker(request.value(QStringLiteral("answer")).toString(), QStringLiteral("traffic")) ==
            QLatin1String("per_kernel")) {
            const QList<double> read{0.537e9, 1.040e9, 1.053e9}, written{1.029e9, 1.038e9, 1.047e9};
            QJsonArray perKernel;
            const QJsonArray kernels = response.value(QStringLiteral("kernels")).toArray();
            for (qsizetype i = 0; i < kernels.size() && i < read.size(); ++i) {
                QJsonObject k{{QStringLiteral("name"), kernels.at(i).toObject().value(QStringLiteral("name"))},
                              {QStringLiteral("calls"), 1},
                              {QStringLiteral("dram_read_bytes"), read.at(i)},
                              {QStringLiteral("dram_write_bytes"), written.at(i)}};
                if (i + 1 == std::min<qsizetype>(kernels.size(), read.size()))
                    k.insert(QStringLiteral("written_back_after_bytes"), 1.7e7);
                perKernel.append(k);
            }
            response.insert(QStringLiteral("traffic"),
                            QJsonObject{{QStringLiteral("profiled"), true},
                                        {QStringLiteral("dram_bytes"), 5.7615e9},
                                        {QStringLiteral("dram_read_bytes"), 2.631e9},
                                        {QStringLiteral("dram_write_bytes"), 3.1305e9},
                                        {QStringLiteral("kernels"), kernels.size()},
                                        {QStringLiteral("passes"), 1},
                                        {QStringLiteral("method"), QStringLiteral("cupti_range_profiler")},
                                        {QStringLiteral("l2"), QStringLiteral("cold")},
                                        {QStringLiteral("per_kernel"),
                                         QJsonObject{{QStringLiteral("profiled"), true},
                                                     {QStringLiteral("method"), QStringLiteral("cupti_auto_range")},
                                                     {QStringLiteral("replay"), QStringLiteral("user")},
                                                     {QStringLiteral("passes"), 1},
                                                     {QStringLiteral("kernels"), perKernel}}}});
        }
        QJsonObject profile = response.value(QStringLiteral("profile")).toObject();
        profile.insert(QStringLiteral("name"),
                       request.value(QStringLiteral("profile")).toString(QStringLiteral("kernelbench-fp32")));
        response.insert(QStringLiteral("profile"), profile);
        // Compile-ahead: whether the request carried a cubin, and so whether the compile was cached.
        const bool cubin = request.contains(QStringLiteral("cubin_b64"));
        response.insert(QStringLiteral("cubin_received"), cubin);
        // With $FAKEWORKER_ARCH, as the worker: a cubin for another arch is not used, the answer
        // is compiled here for this one.
        const QString ownArch = qEnvironmentVariable("FAKEWORKER_ARCH");
        const bool cubinUsed =
            cubin && (ownArch.isEmpty() || request.value(QStringLiteral("cubin_arch")).toString() == ownArch);
        if (response.contains(QStringLiteral("compile"))) {
            QJsonObject compile = response.value(QStringLiteral("compile")).toObject();
            compile.remove(QStringLiteral("cached"));
            if (cubinUsed)
                compile.insert(QStringLiteral("cached"), true);
            if (!ownArch.isEmpty())
                compile.insert(QStringLiteral("arch"), ownArch);
            response.insert(QStringLiteral("compile"), compile);
        }
        // What the worker parsed: the recorded echo for the recorded answer, else the stand-in.
        response.insert(QStringLiteral("candidate"),
                        candidateOf(request.value(QStringLiteral("answer")).toString(),
                                    recordedStatus ? name : QStringLiteral("evaluate_incorrect.h200")));
        response.insert(QStringLiteral("echo"), request); // lets tests see what the client sent
        return response;
    }
    return errorResponse(request, QStringLiteral("unknown_type"), QStringLiteral("unknown type ") + type);
}

// `warm`, in its own modes (--warm) as hello has them. Every mode first "warms" (the delay, the
// gate); only `answer` does it under LOCK_SH, as kwb-worker: the GPU work waits for any timing.
void answerWarm(const QJsonObject& request)
{
    qint64 waitMs = 0, warmMs = 0;
    const bool again = g_warm; // as kwb-worker: already_warm, every GPU part 0, the Python's own time
    if (!g_warm) {
        const bool locked = g_quietLockFd >= 0 && g_warmMode == QLatin1String("answer");
        const qint64 asked = nowMs();
        if (locked)
            ::flock(g_quietLockFd, LOCK_SH);
        const qint64 held = nowMs();
        waitMs = held - asked;
        if (g_warmDelayMs > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(g_warmDelayMs));
        // "{pid}" in the path: a gate of this worker's own, so a test can open one spare's and not another's.
        if (const QString gate = qEnvironmentVariable("FAKEWORKER_WARM_GATE")
                                     .replace(QLatin1String("{pid}"), QString::number(::getpid()));
            !gate.isEmpty())
            while (!QFile::exists(gate))
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
        warmMs = nowMs() - held;
        if (locked)
            ::flock(g_quietLockFd, LOCK_UN);
        g_warm = true; // a second warm answers at once
    }
    if (g_warmMode == QLatin1String("garbage")) {
        std::fputs("warm { not json\n", stdout);
        std::fflush(stdout);
        return;
    }
    if (g_warmMode == QLatin1String("unknown_type")) // as answer() says it of any type it does not know
        return writeLine(errorResponse(request, QStringLiteral("unknown_type"), QStringLiteral("unknown type warm")));
    if (g_warmMode == QLatin1String("fail"))
        return writeLine(
            errorResponse(request, QStringLiteral("internal"), QStringLiteral("fake worker: warm failed")));
    QJsonObject response = envelope(request);
    response.insert(QStringLiteral("device"), QStringLiteral("cuda"));
    QJsonObject parts{{QStringLiteral("quiet_wait"), double(waitMs)},
                      {QStringLiteral("context"), double(warmMs)},
                      {QStringLiteral("cublas"), 0.0},
                      {QStringLiteral("cudnn"), 0.0},
                      {QStringLiteral("evaluator"), 0.0},
                      {QStringLiteral("total"), double(waitMs + warmMs)}};
    if (request.value(QLatin1String("python")).toBool())
        parts.insert(QStringLiteral("python"), 7.0);
    if (again)
        response.insert(QStringLiteral("already_warm"), true);
    response.insert(QStringLiteral("warm_ms"), parts);
    writeLine(response);
}

// A request's field, else the evaluate answer's marker "name: value".
QString parameter(const QJsonObject& request, const QString& name)
{
    const QJsonValue value = request.value(name);
    if (value.isDouble())
        return QString::number(value.toInteger());
    if (value.isString())
        return value.toString();
    return marker(request.value(QStringLiteral("answer")).toString(), name);
}

std::vector<char*> g_held; // what `alloc` took stays taken

// The first time of a *_once mode: the file named by $FAKEWORKER_ONCE does not exist yet (it does now).
bool firstTime()
{
    const char* path = std::getenv("FAKEWORKER_ONCE");
    if (!path || QFile::exists(QString::fromLocal8Bit(path)))
        return false;
    QFile file(QString::fromLocal8Bit(path));
    (void)file.open(QIODevice::WriteOnly);
    return true;
}

void serve(const QJsonObject& request)
{
    QString mode = request.value(QStringLiteral("fake")).toString();
    if (mode.isEmpty() && request.value(QStringLiteral("type")) == QLatin1String("evaluate"))
        mode = marker(request.value(QStringLiteral("answer")).toString(), QStringLiteral("fake"));
    if (mode.isEmpty() && request.value(QStringLiteral("type")) == QLatin1String("compile"))
        mode = marker(
            request
                .value(request.contains(QStringLiteral("answer")) ? QStringLiteral("answer") : QStringLiteral("cuda"))
                .toString(),
            QStringLiteral("nvrtc"));
    if (mode.isEmpty())
        mode = g_mode;

    if (mode == QLatin1String("hang")) {
        hangForever();
    } else if (mode == QLatin1String("hang_ignore_term")) {
        std::signal(SIGTERM, SIG_IGN);
        hangForever();
    } else if (mode == QLatin1String("abort")) {
        dieBy(SIGABRT);
    } else if (mode == QLatin1String("segv")) {
        dieBy(SIGSEGV);
    } else if (mode == QLatin1String("sigkill")) {
        dieBy(SIGKILL); // as the OOM killer or another process would end it
    } else if (mode == QLatin1String("self_kill")) {
        ::kill(::getpid(), SIGKILL);
        ::kill(1, SIGKILL);
        if (::getpid() == 1) // kill(-1) outside a sandbox would reach the test's other processes
            ::kill(-1, SIGKILL);
    } else if (mode == QLatin1String("exit_137")) {
        ::_exit(137);
    } else if (mode == QLatin1String("sigkill_once")) {
        if (firstTime())
            dieBy(SIGKILL);
    } else if (mode == QLatin1String("hang_once")) {
        if (firstTime())
            hangForever();
    } else if (mode == QLatin1String("exit")) {
        std::fputs("fake worker: leaving in the middle of a request\n", stderr);
        std::_Exit(3);
    } else if (mode == QLatin1String("broken")) {
        std::fputs("this is not { json\n", stdout);
        std::fflush(stdout);
        return;
    } else if (mode == QLatin1String("huge_line")) {
        const std::string chunk(1 << 20, 'x');
        std::fputs("{\"id\":1,\"pad\":\"", stdout);
        for (int i = 0; i < 17; ++i)
            std::fwrite(chunk.data(), 1, chunk.size(), stdout);
        std::fflush(stdout);
        hangForever();
    } else if (mode == QLatin1String("flood")) {
        const qint64 total = request.value(QStringLiteral("flood_bytes")).toInteger(5 << 20);
        std::string line(99, 'e');
        line.push_back('\n');
        for (qint64 written = 0; written < total; written += qint64(line.size()))
            std::fwrite(line.data(), 1, line.size(), stderr);
        std::fputs("FLOOD-END\n", stderr);
        std::fflush(stderr);
    } else if (mode == QLatin1String("slow")) {
        const QString delay = parameter(request, QStringLiteral("delay_ms"));
        // One request, slow on one GPU only (a host lost mid-job, its job fast elsewhere).
        const QString onDevice =
            parameter(request, QStringLiteral("delay_ms_on_") + qEnvironmentVariable("CUDA_VISIBLE_DEVICES"));
        const int delayMs = !onDevice.isEmpty() ? onDevice.toInt() : delay.isEmpty() ? 300 : delay.toInt();
        std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    } else if (mode == QLatin1String("unhealthy")) {
        QJsonObject response = answer(request);
        response.insert(QStringLiteral("status"), QStringLiteral("runtime_error"));
        response.insert(QStringLiteral("worker_healthy"), false);
        writeLine(response);
        std::exit(0);
    } else if (mode == QLatin1String("alloc") || mode == QLatin1String("threads")) {
        if (mode == QLatin1String("alloc")) {
            const QString mib = parameter(request, QStringLiteral("mib"));
            const qint64 total = (mib.isEmpty() ? 256 : mib.toLongLong()) << 20;
            constexpr qint64 chunk = qint64(16) << 20;
            for (qint64 taken = 0; taken < total; taken += chunk) {
                auto* block = static_cast<char*>(std::malloc(size_t(chunk)));
                if (!block)
                    break;
                std::memset(block, 1, size_t(chunk)); // touched: resident, not just reserved
                g_held.push_back(block);
            }
        } else {
            const QString count = parameter(request, QStringLiteral("count"));
            for (int i = 0, n = count.isEmpty() ? 16 : count.toInt(); i < n; ++i)
                std::thread([] { hangForever(); }).detach();
        }
        if (parameter(request, QStringLiteral("then")) == QLatin1String("hang"))
            hangForever();
    } else if (mode == QLatin1String("write")) {
        QString path = request.value(QStringLiteral("path")).toString();
        if (path.isEmpty())
            path = qEnvironmentVariable("TMPDIR", QStringLiteral("/tmp")) + QStringLiteral("/fake-write");
        const int fd = ::open(path.toLocal8Bit().constData(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int error = fd < 0 ? errno : 0;
        if (fd >= 0) {
            (void)!::write(fd, "written\n", 8);
            ::close(fd);
        }
        QJsonObject response = answer(request);
        response.insert(QStringLiteral("write_errno"), error);
        response.insert(QStringLiteral("write_error"), QString::fromLocal8Bit(std::strerror(error)));
        response.insert(QStringLiteral("path"), path);
        writeLine(response);
        return;
    } else if (mode == QLatin1String("stat") || mode == QLatin1String("read")) {
        const QString path = request.value(QStringLiteral("path")).toString();
        QJsonObject response = answer(request);
        response.insert(QStringLiteral("exists"), QFileInfo::exists(path));
        QFile file(path);
        if (mode == QLatin1String("read") && file.open(QIODevice::ReadOnly))
            response.insert(QStringLiteral("text"), QString::fromUtf8(file.read(4096)));
        writeLine(response);
        return;
    } else if (mode == QLatin1String("connect")) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(quint16(request.value(QStringLiteral("port")).toInt()));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        int error = fd < 0 ? errno : 0;
        if (fd >= 0) {
            if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
                error = errno;
            ::close(fd);
        }
        QJsonObject response = answer(request);
        response.insert(QStringLiteral("connect_errno"), error);
        response.insert(QStringLiteral("connect_error"), QString::fromLocal8Bit(std::strerror(error)));
        writeLine(response);
        return;
    } else if (mode == QLatin1String("wrong_id")) {
        QJsonObject response = answer(request);
        response.insert(QStringLiteral("id"), 987654);
        writeLine(response);
        return;
    }
    if ((mode == QLatin1String("oom_once") && firstTime()) || mode == QLatin1String("oom")) {
        // An allocation that fails (the first time only, or always), as torch says it and as its
        // allocator reports it to kwb-worker.
        QJsonObject response = answer(request);
        response.insert(QStringLiteral("status"), QStringLiteral("runtime_error"));
        response.insert(QStringLiteral("stage"), QStringLiteral("correctness"));
        response.insert(QStringLiteral("message"), QStringLiteral("CUDA out of memory. Tried to allocate 4.00 GiB"));
        constexpr double kGiB = double(1LL << 30);
        const QJsonObject report{
            {QStringLiteral("gpu_memory"),
             QJsonObject{{QStringLiteral("free_bytes"), 1 * kGiB},
                         {QStringLiteral("total_bytes"), 80 * kGiB},
                         {QStringLiteral("out_of_memory"),
                          QJsonObject{{QStringLiteral("count"), 1},
                                      {QStringLiteral("requested_bytes"), 4 * kGiB},
                                      {QStringLiteral("free_bytes"), 1 * kGiB},
                                      {QStringLiteral("total_bytes"), 80 * kGiB},
                                      {QStringLiteral("pci_bus_id"), QStringLiteral("0000:19:00.0")}}}}}};
        response.insert(QStringLiteral("gpu_memory"), request.value(QStringLiteral("fake_gpu_memory")).isObject()
                                                          ? request.value(QStringLiteral("fake_gpu_memory"))
                                                          : report.value(QStringLiteral("gpu_memory")));
        writeLine(response);
        return;
    }
    std::fprintf(stderr, "fake worker %d: served %s\n", int(::getpid()),
                 request.value(QStringLiteral("type")).toString().toUtf8().constData());
    QJsonObject response = answer(request);
    // As kwb-worker's evaluate says the device's memory (docs/protocol.md, gpu_memory).
    if (request.value(QStringLiteral("fake_gpu_memory")).isObject())
        response.insert(QStringLiteral("gpu_memory"), request.value(QStringLiteral("fake_gpu_memory")));
    if (request.contains(QStringLiteral("fake_exit_delay_ms")))
        g_exitDelayMs = request.value(QStringLiteral("fake_exit_delay_ms")).toInt();
    writeLine(response);
}

} // namespace

int main(int argc, char** argv)
{
    g_startedMs = nowMs();
    for (int i = 1; i < argc; ++i)
        g_arguments.append(QString::fromLocal8Bit(argv[i]));
    kwb::setUpSandboxInit(); // as kwb-worker: PID 1 of its namespace in the sandbox
    if (const char* delay = std::getenv("FAKEWORKER_HELLO_DELAY_MS"))
        g_helloDelayMs = std::atoi(delay);
    if (const char* mode = std::getenv("FAKEWORKER_MODE"))
        g_mode = QString::fromUtf8(mode);
    if (const char* dir = std::getenv("FAKEWORKER_RECORDED_DIR"))
        g_recordedDir = QString::fromLocal8Bit(dir);
    if (const char* protocol = std::getenv("FAKEWORKER_PROTOCOL"))
        g_protocol = std::atoi(protocol);
    if (const char* warm = std::getenv("FAKEWORKER_WARM"))
        g_warmMode = QString::fromUtf8(warm);
    if (const char* delay = std::getenv("FAKEWORKER_WARM_DELAY_MS"))
        g_warmDelayMs = std::atoi(delay);
    // As kwb-worker: a remote worker ends itself when its stdin closes (parentwatch.h).
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--end-on-stdin-eof")
            kwb::watchInputHangup(0);
    std::optional<qint64> hostMemory;
    std::optional<int> hostThreads;
    for (int i = 1; i + 1 < argc; ++i) {
        const std::string option = argv[i];
        if (option.rfind("--", 0) != 0 || option == "--end-on-stdin-eof")
            continue; // a flag without a value (or a value taken below)
        const QString value = QString::fromUtf8(argv[++i]);
        if (option == "--protocol")
            g_protocol = value.toInt();
        else if (option == "--mode")
            g_mode = value;
        else if (option == "--hello")
            g_helloMode = value;
        else if (option == "--hello-delay")
            g_helloDelayMs = value.toInt();
        else if (option == "--warm")
            g_warmMode = value;
        else if (option == "--warm-delay")
            g_warmDelayMs = value.toInt();
        else if (option == "--gpu-quiet-lock")
            g_quietLockPath = value;
        else if (option == "--recorded")
            g_recordedDir = value;
        else if (option == "--max-host-memory")
            hostMemory = value == QLatin1String("default") ? 0 : value.toLongLong();
        else if (option == "--max-host-threads")
            hostThreads = value == QLatin1String("default") ? 0 : value.toInt();
    }
    if (!g_quietLockPath.isEmpty()) { // as kwb-worker: read-only (the sandbox's / is), kept open
        g_quietLockFd = ::open(g_quietLockPath.toLocal8Bit().constData(), O_RDONLY | O_CLOEXEC);
        const int intent =
            ::open((g_quietLockPath + QStringLiteral(".intent")).toLocal8Bit().constData(), O_RDONLY | O_CLOEXEC);
        g_quietIntent = intent >= 0;
        if (intent >= 0)
            ::close(intent);
        const int turn =
            ::open((g_quietLockPath + QStringLiteral(".turn")).toLocal8Bit().constData(), O_RDONLY | O_CLOEXEC);
        g_quietTurn = turn >= 0;
        if (turn >= 0)
            ::close(turn);
        if (g_quietLockFd < 0) {
            g_quietLockError = QString::fromLocal8Bit(std::strerror(errno));
            std::fprintf(stderr, "fake worker: no GPU quiet lock %s: %s\n", qPrintable(g_quietLockPath),
                         qPrintable(g_quietLockError));
        }
    }
    // As kwb-worker: a remote worker enforces its host limits itself (parentwatch.h).
    if (hostMemory || hostThreads)
        kwb::watchHostLimits(hostMemory.value_or(0), hostThreads.value_or(0));

    if (g_helloMode == QLatin1String("exit_127")) {
        // What the dynamic loader prints when the real worker's libtorch is missing.
        std::fputs("kwb-worker: error while loading shared libraries: libtorch_cpu.so: cannot open "
                   "shared object file: No such file or directory\n",
                   stderr);
        return 127;
    }

    std::string line;
    while (std::getline(std::cin, line)) {
        g_receivedMs = nowMs();
        ++g_requestsSeen;
        logRequest(QByteArray::fromStdString(line));
        QJsonParseError error;
        const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(line), &error);
        if (!document.isObject()) {
            writeLine(
                QJsonObject{{QStringLiteral("id"), QJsonValue::Null},
                            {QStringLiteral("type"), QString()},
                            {QStringLiteral("ok"), false},
                            {QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), QStringLiteral("bad_json")},
                                                                  {QStringLiteral("message"), error.errorString()}}}});
            continue;
        }
        const QJsonObject request = document.object();
        const QString type = request.value(QStringLiteral("type")).toString();
        if (type == QLatin1String("shutdown"))
            return 0;
        if (type == QLatin1String("hello")) {
            if (g_helloMode == QLatin1String("hang"))
                hangForever();
            if (g_helloMode == QLatin1String("segv"))
                dieBy(SIGSEGV);
            if (g_helloDelayMs > 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(g_helloDelayMs));
            writeLine(answer(request));
            continue;
        }
        if (type == QLatin1String("warm")) {
            answerWarm(request);
            continue;
        }
        serve(request);
    }
    if (g_exitDelayMs > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(g_exitDelayMs));
    return 0;
}
