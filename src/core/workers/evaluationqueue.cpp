#include "evaluationqueue.h"

#include "core/workers/gpulease.h"

#include "core/protocol/defaults.h"
#include "core/protocol/workerrequests.h"
#include "core/protocol/workerresponses.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDateTime>
#include <QJsonValue>
#include <QSet>
#include <QThread>

#include <algorithm>
#include <utility>

namespace kwb {

namespace {

const QString kVisibleDevices = QStringLiteral("CUDA_VISIBLE_DEVICES");

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

} // namespace

namespace {

QList<WorkerTarget> localTargets(const QList<int>& ordinals)
{
    QList<WorkerTarget> targets;
    for (int ordinal : ordinals.isEmpty() ? QList<int>{0} : ordinals)
        targets.append(WorkerTarget::local(ordinal));
    return targets;
}

QList<int> ordinalsOf(const QList<WorkerTarget>& targets)
{
    QList<int> ordinals;
    for (const WorkerTarget& target : targets)
        ordinals.append(target.gpu);
    return ordinals;
}

} // namespace

EvaluationQueue::EvaluationQueue(const QList<int>& gpuOrdinals, QObject* parent)
    : EvaluationQueue(localTargets(gpuOrdinals), parent)
{}

EvaluationQueue::EvaluationQueue(const QList<WorkerTarget>& targets, QObject* parent)
    : QObject(parent)
    , m_gpuOrdinals(ordinalsOf(targets.isEmpty() ? localTargets({}) : targets))
    , m_environment(workerEnvironment())
    , m_compileWorkerCount(std::max(1, QThread::idealThreadCount() - 1))
{
    for (int index = 0; index < m_gpuOrdinals.size(); ++index) {
        Gpu gpu;
        gpu.ordinal = m_gpuOrdinals.at(index);
        gpu.target = targets.isEmpty() ? WorkerTarget::local(gpu.ordinal) : targets.at(index);
        m_gpus.append(gpu);
        while (m_gpus.at(index).gpuSlots.size() < slotCount(m_gpus.at(index)))
            addSlot(index);
    }
    connect(GpuLeases::instance(), &GpuLeases::granted, this, [this](qint64 ticket, int) { onLeaseGranted(ticket); });
    m_compileWaitTimer.setSingleShot(true);
    connect(&m_compileWaitTimer, &QTimer::timeout, this, &EvaluationQueue::scheduleWork);
}

EvaluationQueue::~EvaluationQueue()
{
    for (int g = 0; g < m_gpus.size(); ++g)
        releaseLease(g);
    // The supervisors end their workers without signals; deleting them here, not in ~QObject,
    // keeps any late signal away from a half-destroyed queue.
    for (Gpu& gpu : m_gpus) {
        for (Slot& slot : gpu.gpuSlots) {
            slot.supervisor->disconnect(this);
            delete slot.supervisor;
        }
    }
    for (Compiler& compiler : m_compilers) {
        compiler.supervisor->disconnect(this);
        delete compiler.supervisor;
    }
}

void EvaluationQueue::addSlot(int gpuIndex)
{
    Gpu& gpu = m_gpus[gpuIndex];
    const int slotIndex = int(gpu.gpuSlots.size());
    auto* supervisor = new WorkerSupervisor(this);
    configureSlot(gpu, supervisor);
    connect(supervisor, &WorkerSupervisor::responseAvailable, this,
            [this, gpuIndex, slotIndex](qint64 requestId, const WorkerResponse& response) {
                onGpuResponse(gpuIndex, slotIndex, requestId, response);
            });
    connect(supervisor, &WorkerSupervisor::requestFailed, this,
            [this, gpuIndex, slotIndex](qint64 requestId, const QString& status, const QString& message) {
                onGpuFailure(gpuIndex, slotIndex, requestId, status, message);
            });
    // A running job's worker that answers hello may have a job started beside it (freeSlotFor).
    connect(supervisor, &WorkerSupervisor::workerAvailable, this, [this] { scheduleWork(); });
    // Kept until the job's final signal: a run that is not reported (evaluated again alone) says nothing.
    connect(supervisor, &WorkerSupervisor::stderrAvailable, this,
            [this, gpuIndex, slotIndex](qint64 requestId, const QByteArray& tail, qint64 dropped) {
                const qsizetype index = runningJobIndex(gpuIndex, slotIndex, requestId);
                if (index < 0)
                    return;
                m_jobs[index].stderrTail = tail;
                m_jobs[index].stderrDropped = dropped;
            });
    gpu.gpuSlots.append(Slot{supervisor, 0});
}

void EvaluationQueue::configureSlot(const Gpu& gpu, WorkerSupervisor* supervisor) const
{
    supervisor->setTarget(gpu.target);
    supervisor->setProgram(m_program, m_arguments);
    QProcessEnvironment own = m_environment;
    // The GPU this process calls `ordinal`, under whatever CUDA_VISIBLE_DEVICES it was given;
    // a remote worker's GPU is named there (the ssh script), or by Slurm.
    if (gpu.target.isRemote())
        own.remove(kVisibleDevices);
    else
        own.insert(kVisibleDevices, cudaVisibleDeviceEntry(gpu.ordinal, m_environment));
    supervisor->setProcessEnvironment(own);
    supervisor->setIsolation(m_isolation);
    supervisor->setLimits(m_workerLimits);
    supervisor->setKillGracePeriod(m_killGraceMs);
    supervisor->setStderrLimit(m_stderrLimit);
    // A run's candidates come back to back as often as spaced by the model: spares warm while
    // one is evaluated too (59.9 -> 69.1 candidates/min over L1+L2 on an H200, docs/decisions.md).
    supervisor->setWarmWhileBusy(true);
    supervisor->setWarmPython(m_warmPython);
    // Every KernelBench-format candidate retires the worker it ran in, even in reuse mode: with one
    // spare, every other candidate waited for a worker's start (session 36's cold run on an H100:
    // verdicts 1-2 s and 4-5.5 s apart in turn). A slot keeps as many as fresh workers do.
    supervisor->setSparesForRetiringWorkers(SparePool::kDefaultCount);
}

void EvaluationQueue::configureSlots()
{
    for (const Gpu& gpu : std::as_const(m_gpus))
        for (const Slot& slot : gpu.gpuSlots)
            configureSlot(gpu, slot.supervisor);
}

int EvaluationQueue::slotCount(const Gpu& gpu) const
{
    return gpu.target.isRemote() ? 1 : m_evaluationsPerGpu;
}

QList<WorkerSupervisor*> EvaluationQueue::gpuSupervisors(int index) const
{
    QList<WorkerSupervisor*> supervisors;
    for (const Slot& slot : m_gpus.value(index).gpuSlots)
        supervisors.append(slot.supervisor);
    return supervisors;
}

void EvaluationQueue::setEvaluationsPerGpu(int n)
{
    m_evaluationsPerGpu = std::clamp(n, 1, kMaxEvaluationsPerGpu);
    for (int g = 0; g < m_gpus.size(); ++g) {
        Gpu& gpu = m_gpus[g];
        while (gpu.gpuSlots.size() < slotCount(gpu))
            addSlot(g);
        // A slot running a job stays until it ends, taking no other (work() uses slotCount()).
        while (gpu.gpuSlots.size() > slotCount(gpu) && gpu.gpuSlots.last().runningJob == 0) {
            Slot slot = gpu.gpuSlots.takeLast();
            slot.supervisor->disconnect(this);
            delete slot.supervisor;
        }
    }
}

void EvaluationQueue::setProgram(const QString& program, const QStringList& arguments)
{
    m_program = program;
    m_arguments = arguments;
    configureSlots();
    for (const Compiler& compiler : std::as_const(m_compilers))
        compiler.supervisor->setProgram(program, arguments);
}

void EvaluationQueue::setProcessEnvironment(const QProcessEnvironment& environment)
{
    m_environment = environment;
    configureSlots();
    QProcessEnvironment noGpu = environment;
    noGpu.insert(kVisibleDevices, QString()); // empty: CUDA sees no device at all
    for (const Compiler& compiler : std::as_const(m_compilers))
        compiler.supervisor->setProcessEnvironment(noGpu);
}

void EvaluationQueue::setIsolation(WorkerSupervisor::Isolation isolation)
{
    m_isolation = isolation;
    configureSlots();
}

void EvaluationQueue::setWorkerLimits(const WorkerLimits& limits)
{
    m_workerLimits = limits;
    configureSlots();
    for (const Compiler& compiler : std::as_const(m_compilers))
        compiler.supervisor->setLimits(limits);
}

void EvaluationQueue::setTimeout(int ms)
{
    m_timeoutMs = ms;
}

void EvaluationQueue::setKillGracePeriod(int ms)
{
    m_killGraceMs = ms;
    configureSlots();
    for (const Compiler& compiler : std::as_const(m_compilers))
        compiler.supervisor->setKillGracePeriod(ms);
}

void EvaluationQueue::setStderrLimit(qsizetype bytes)
{
    m_stderrLimit = bytes;
    configureSlots();
}

void EvaluationQueue::setCompileWorkerCount(int count)
{
    m_compileWorkerCount = std::max(0, count);
    while (m_compilers.size() > m_compileWorkerCount && m_compilers.last().job == 0) {
        Compiler compiler = m_compilers.takeLast();
        compiler.supervisor->disconnect(this);
        delete compiler.supervisor;
    }
}

qint64 EvaluationQueue::submit(const WorkerRequests::Evaluate& request, int timeoutMs)
{
    const qint64 id = ++m_nextId;
    Job job;
    job.id = id;
    job.request = request;
    job.request.module.reset(); // the queue's own, from its compile ahead
    job.timeoutMs = timeoutMs;
    // Every answer is compiled ahead: the worker's parser finds its cuda block (the client has
    // no parser of its own); a torch-only answer costs one cheap compile that returns nothing.
    if (m_compileWorkerCount > 0)
        job.compile = CompileState::Waiting;
    QCryptographicHash key(QCryptographicHash::Sha256);
    key.addData(request.answerFormat.toUtf8());
    key.addData(QByteArrayView("\n", 1));
    key.addData(request.codeBlock.toUtf8()); // which block is the module
    key.addData(QByteArrayView("\n", 1));
    key.addData(request.answer.toUtf8());
    job.compileKey = key.result();
    // A KernelBench-format answer runs in the worker's embedded Python: from now on the GPUs'
    // spares start it while they warm, off the candidate's path. Its library retires the worker it
    // loads in, so the GPUs' spares start now, not once the first evaluation has retired its worker
    // (WorkerSupervisor::expectRetiringWorkers): its builds leave them the time.
    if (buildsExtension(job) && !m_warmPython) {
        m_warmPython = true;
        for (const Gpu& gpu : std::as_const(m_gpus))
            for (const Slot& slot : gpu.gpuSlots) {
                slot.supervisor->setWarmPython(true); // the spares already warmed: again, for the Python
                slot.supervisor->expectRetiringWorkers();
            }
        for (const Compiler& compiler : std::as_const(m_compilers))
            compiler.supervisor->setWarmPython(true);
    }
    if (m_jobs.isEmpty()) {
        // A new batch: say how the last one ended before counting from zero.
        if (m_progressScheduled) {
            m_progressScheduled = false;
            Q_EMIT jobProgress(m_done, m_total);
        }
        m_done = 0;
        m_total = 0;
    }
    m_jobs.append(job);
    ++m_total;
    noteProgress();
    scheduleWork();
    return id;
}

bool EvaluationQueue::cancel(qint64 id)
{
    const qsizetype index = indexOfJob(id);
    if (index < 0)
        return false;
    const Job& job = m_jobs.at(index);
    if (job.gpu >= 0) // its supervisor ends the worker and reports `cancelled`
        return m_gpus.at(job.gpu).gpuSlots.at(job.slot).supervisor->cancelRequest(job.gpuRequest);
    // A compile in flight finishes on its own worker (cancelling would cost that worker's
    // restart); its result finds no job and is dropped.
    m_jobs.removeAt(index);
    ++m_done;
    failLater(id, wireName(EvaluationStatus::Cancelled), QStringLiteral("cancelled before it started"));
    return true;
}

void EvaluationQueue::cancelAll()
{
    const QList<Job> jobs = m_jobs;
    for (const Job& job : jobs)
        cancel(job.id);
}

void EvaluationQueue::failLater(qint64 id, const QString& status, const QString& message)
{
    QMetaObject::invokeMethod(
        this,
        [this, id, status, message] {
            Q_EMIT jobFailed(id, status, message);
            noteProgress();
        },
        Qt::QueuedConnection);
}

void EvaluationQueue::noteProgress()
{
    if (m_progressScheduled)
        return;
    m_progressScheduled = true;
    QMetaObject::invokeMethod(
        this,
        [this] {
            if (!m_progressScheduled)
                return; // already said by submit()
            m_progressScheduled = false;
            Q_EMIT jobProgress(m_done, m_total);
        },
        Qt::QueuedConnection);
}

void EvaluationQueue::scheduleWork()
{
    if (m_workScheduled)
        return;
    m_workScheduled = true;
    QMetaObject::invokeMethod(this, &EvaluationQueue::work, Qt::QueuedConnection);
}

qsizetype EvaluationQueue::indexOfJob(qint64 id) const
{
    if (id == 0)
        return -1;
    for (qsizetype i = 0; i < m_jobs.size(); ++i) {
        if (m_jobs.at(i).id == id)
            return i;
    }
    return -1;
}

QString EvaluationQueue::archFor(const Job& job) const
{
    return job.request.arch.isEmpty() ? m_arch : job.request.arch;
}

void EvaluationQueue::requestArch()
{
    if (m_archAsked || !m_arch.isEmpty() || m_compileWorkerCount <= 0)
        return;
    const bool wanted = std::any_of(m_jobs.cbegin(), m_jobs.cend(), [this](const Job& job) {
        return job.compile == CompileState::Waiting && archFor(job).isEmpty();
    });
    if (!wanted)
        return;
    m_archAsked = true; // once: a machine without a GPU will not grow one
    m_deviceRequest = m_gpus.first().gpuSlots.first().supervisor->sendRequest(WorkerRequests::device(), m_timeoutMs);
}

int EvaluationQueue::runningJobs(const Gpu& gpu) const
{
    return int(std::count_if(gpu.gpuSlots.cbegin(), gpu.gpuSlots.cend(),
                             [](const Slot& slot) { return slot.runningJob != 0; }));
}

bool EvaluationQueue::runsGpuJob(const Gpu& gpu) const
{
    return std::any_of(gpu.gpuSlots.cbegin(), gpu.gpuSlots.cend(), [this](const Slot& slot) {
        const qsizetype index = indexOfJob(slot.runningJob);
        return index >= 0 && needsGpu(m_jobs.at(index));
    });
}

int EvaluationQueue::firstFreeSlot(const Gpu& gpu) const
{
    for (int s = 0; !gpu.lost && s < slotCount(gpu) && s < gpu.gpuSlots.size(); ++s)
        if (gpu.gpuSlots.at(s).runningJob == 0)
            return s;
    return -1;
}

int EvaluationQueue::freeSlotFor(const Gpu& gpu, const Job& job) const
{
    const int free = firstFreeSlot(gpu);
    if (free < 0 || runningJobs(gpu) == 0)
        return free;
    // A job evaluated again alone has its GPU to itself, from its start to its end.
    if (job.alone)
        return -1;
    for (const Slot& slot : gpu.gpuSlots) {
        if (slot.runningJob == 0)
            continue;
        const qsizetype index = indexOfJob(slot.runningJob);
        if (index >= 0 && m_jobs.at(index).alone)
            return -1;
        // Only beside a worker that holds the GPU's quiet lock (its hello names it): that lock is
        // what keeps a timing alone on the GPU. One that has not answered hello yet, or runs
        // without it, has the GPU to itself.
        if (slot.supervisor->workerHello().quietLock.isEmpty())
            return -1;
    }
    // Another holder waits for this GPU: the jobs running end, and the lease goes to it then.
    if (needsGpu(job) && gpu.leaseHeld && GpuLeases::instance()->isWanted(gpu.lease))
        return -1;
    return free;
}

void EvaluationQueue::work()
{
    m_workScheduled = false;
    failJobsWithoutWorkers();
    requestArch();
    // Jobs that wait for the arch or their compile: each slot's first spare starts now, beside the
    // worker that answers `device` and then takes the first job (WorkerSupervisor::expectEvaluations).
    if (std::any_of(m_jobs.cbegin(), m_jobs.cend(), [](const Job& job) { return job.gpu < 0 && needsGpu(job); }))
        for (const Gpu& gpu : std::as_const(m_gpus))
            if (!gpu.lost)
                for (const Slot& slot : gpu.gpuSlots)
                    slot.supervisor->expectEvaluations();

    // GPUs first, so a job whose compile has not started never waits for one. Jobs go out in
    // submission order: none overtakes a job whose NVRTC compile is running (it is done in
    // seconds), not even one with its cubin ready. A KernelBench-format job whose build waits or
    // runs is passed over: the GPU evaluates the next ready job meanwhile (its build would take
    // a minute or more, and evaluating it now would build it again, on the GPU's time). Each job
    // goes to the least busy GPU that may take it: an idle GPU before a second slot of a busy one.
    QList<qint64> started;
    QList<bool> waitsForLease(m_gpus.size(), false); // asked for in this pass, not held
    for (;;) {
        // Only a GPU with a free slot asks for a job: nextReadyJob() starts a running compile's
        // wait (setCompileWaitLimit) from when a GPU could have taken it.
        if (std::none_of(m_gpus.cbegin(), m_gpus.cend(), [this](const Gpu& gpu) { return firstFreeSlot(gpu) >= 0; }))
            break;
        const qsizetype next = nextReadyJob();
        if (next < 0)
            break;
        Job& job = m_jobs[next];
        int g = -1;
        int slot = -1;
        for (int candidate = 0; candidate < m_gpus.size(); ++candidate) {
            if (waitsForLease.at(candidate))
                continue;
            const int free = freeSlotFor(m_gpus.at(candidate), job);
            if (free >= 0 && (g < 0 || runningJobs(m_gpus.at(candidate)) < runningJobs(m_gpus.at(g)))) {
                g = candidate;
                slot = free;
            }
        }
        if (g < 0)
            break;
        Gpu& gpu = m_gpus[g];
        if (needsGpu(job) && gpu.lease == 0) {
            const QString holder = QStringLiteral("evaluate job %1 %2 (pid %3)")
                                       .arg(job.id)
                                       .arg(job.request.task)
                                       .arg(QCoreApplication::applicationPid());
            GpuLeases* leases = GpuLeases::instance();
            const QString remoteKey = gpu.target.leaseKey();
            gpu.lease = remoteKey.isEmpty() ? leases->tryAcquire(gpu.ordinal, holder)
                                            : leases->tryAcquireKey(remoteKey, -1, holder);
            gpu.leaseHeld = gpu.lease != 0;
            if (!gpu.leaseHeld) // onLeaseGranted() schedules the work again
                gpu.lease = remoteKey.isEmpty() ? leases->request(gpu.ordinal, holder)
                                                : leases->requestKey(remoteKey, -1, holder);
        }
        if (needsGpu(job) && !gpu.leaseHeld) {
            waitsForLease[g] = true; // the job may go to another GPU
            continue;
        }
        dispatchToGpu(g, slot, next);
        started.append(job.id);
    }
    // A lease granted to a GPU that has nothing to run now goes back at once (jobs whose
    // builds take minutes do not keep the GPU from others).
    for (int g = 0; g < m_gpus.size(); ++g)
        if (!runsGpuJob(m_gpus.at(g)) && m_gpus.at(g).lease != 0 && nextReadyJob() < 0)
            releaseLease(g);
    startCompiles();
    for (qint64 id : std::as_const(started))
        Q_EMIT jobStarted(id);
}

qsizetype EvaluationQueue::nextReadyJob()
{
    for (qsizetype i = 0; i < m_jobs.size(); ++i) {
        Job& job = m_jobs[i];
        if (job.gpu >= 0)
            continue;
        if (buildsExtension(job) && (job.compile == CompileState::Running ||
                                     (job.compile == CompileState::Waiting && compileAheadCanTake(job))))
            continue;
        if (job.compile == CompileState::Running) {
            // Its compile will usually be done before a worker could have compiled it itself.
            const qint64 now = nowMs();
            if (job.waitSinceMs < 0)
                job.waitSinceMs = now;
            const qint64 left = job.waitSinceMs + m_compileWaitMs - now;
            if (left > 0) {
                m_compileWaitTimer.start(int(left));
                return -1;
            }
        }
        return i;
    }
    return -1;
}

void EvaluationQueue::dispatchToGpu(int gpuIndex, int slotIndex, qsizetype jobIndex)
{
    Job& job = m_jobs[jobIndex];
    const auto requestFor = [this](const WorkerRequests::Evaluate& evaluate) {
        QJsonObject request = WorkerRequests::evaluate(evaluate);
        for (auto it = m_benchmarkFields.constBegin(); it != m_benchmarkFields.constEnd(); ++it)
            request.insert(it.key(), it.value());
        return request;
    };
    QJsonObject request = requestFor(job.request);
    if (job.compile == CompileState::Done && !job.cubin.isEmpty()) {
        WorkerRequests::Evaluate withModule = job.request;
        withModule.module = WorkerRequests::CompiledModule{job.cubin, job.cubinArch, job.cubinSourceHash,
                                                           job.compileLog, job.cubinKernelFacts};
        // A cubin must never cost a job its evaluation: past the line limit its kernel facts are
        // left out first (the worker reads them itself), then the cubin.
        for (const bool withFacts : {true, false}) {
            if (!withFacts)
                withModule.module->kernelFacts = QJsonObject();
            const QJsonObject withCubin = requestFor(withModule);
            if (!ProtocolCodec::encodeRequest(withCubin).isEmpty()) {
                request = withCubin;
                break;
            }
        }
    }
    job.compile = CompileState::Done; // a compile still running is no longer waited for
    job.gpu = gpuIndex;
    job.slot = slotIndex;
    Gpu& gpu = m_gpus[gpuIndex];
    for (const Slot& other : std::as_const(gpu.gpuSlots)) {
        if (const qsizetype index = indexOfJob(other.runningJob); index >= 0) {
            m_jobs[index].besideAnother = true;
            job.besideAnother = true;
        }
    }
    Slot& slot = gpu.gpuSlots[slotIndex];
    slot.runningJob = job.id;
    job.gpuRequest = slot.supervisor->sendRequest(request, job.timeoutMs < 0 ? m_timeoutMs : job.timeoutMs);
    // The supervisor holds the request now; the answer and the module can be up to 16 MiB. A job
    // keeps them while it may yet be sent again: a lost host's job goes to another worker, a job
    // beside another or one that ran out of memory other processes held is evaluated again alone
    // (once for the latter: after that, the copy goes).
    if (!gpu.target.isRemote() && job.ranOutElsewhere) {
        job.request.answer.clear();
        job.cubin.clear();
        job.cubinKernelFacts = QJsonObject();
    }
}

void EvaluationQueue::ensureCompilers()
{
    QProcessEnvironment noGpu = m_environment;
    noGpu.insert(kVisibleDevices, QString());
    while (m_compilers.size() < m_compileWorkerCount) {
        const int index = int(m_compilers.size());
        Compiler compiler;
        compiler.supervisor = new WorkerSupervisor(this);
        // Compiling leaves nothing behind that could spoil the next compile: keep the worker.
        compiler.supervisor->setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
        // Except a KernelBench-format answer's compile, which loads its library and retires the
        // worker: its spare then starts torch's Python as soon as it is up (no GPU to wait for).
        compiler.supervisor->setWarmWhileBusy(true);
        compiler.supervisor->setWarmPython(m_warmPython);
        compiler.supervisor->setProgram(m_program, m_arguments);
        compiler.supervisor->setProcessEnvironment(noGpu);
        compiler.supervisor->setKillGracePeriod(m_killGraceMs);
        compiler.supervisor->setLimits(m_workerLimits);
        connect(compiler.supervisor, &WorkerSupervisor::responseAvailable, this,
                [this, index](qint64 requestId, const WorkerResponse& response) {
                    onCompileResponse(index, requestId, response);
                });
        connect(compiler.supervisor, &WorkerSupervisor::requestFailed, this,
                [this, index](qint64 requestId) { onCompileFailure(index, requestId); });
        m_compilers.append(compiler);
    }
}

bool EvaluationQueue::buildsExtension(const Job& job)
{
    return job.request.answerFormat == QLatin1String(defaults::kAnswerFormatKernelBench);
}

bool EvaluationQueue::compileAheadCanTake(const Job& job) const
{
    // Without an arch (the GPU's `device` answer failed) nothing is compiled ahead.
    return m_compileWorkerCount > 0 && (!archFor(job).isEmpty() || m_deviceRequest != 0 || !m_archAsked);
}

void EvaluationQueue::startCompiles()
{
    if (m_compileWorkerCount <= 0)
        return;
    QSet<QByteArray> compiling; // compile keys with their arch, of the compiles running
    for (const Job& job : std::as_const(m_jobs))
        if (job.compile == CompileState::Running && job.gpu < 0)
            compiling.insert(job.compileKey + job.cubinArch.toUtf8());
    int considered = 0;
    for (Job& job : m_jobs) {
        if (job.gpu >= 0)
            continue;
        // Cubins are held in memory until their job runs; a KernelBench build leaves its
        // extension in the worker's cache, so every such job queued is built ahead.
        if (!buildsExtension(job) && ++considered > kCompileLookahead)
            continue;
        if (job.compile != CompileState::Waiting)
            continue;
        const QString arch = archFor(job);
        if (arch.isEmpty())
            continue; // the device answer is still to come
        // The same answer compiling for another job: this one takes that outcome (shareCompile).
        if (compiling.contains(job.compileKey + arch.toUtf8()))
            continue;
        ensureCompilers();
        // The lowest free index, so that few compile workers start when few jobs wait.
        qsizetype free = -1;
        for (qsizetype c = 0; c < m_compilers.size() && free < 0; ++c) {
            if (m_compilers.at(c).job == 0)
                free = c;
        }
        if (free < 0)
            break;
        WorkerRequests::Compile compile;
        compile.answer = job.request.answer;
        compile.arch = arch;
        compile.returnCubin = true;
        // The front end the evaluation will use builds ahead too (a KernelBench answer's
        // load_inline into the extension cache).
        compile.answerFormat = job.request.answerFormat;
        compile.codeBlock = job.request.codeBlock;
        const QJsonObject request = WorkerRequests::compile(compile);
        job.compile = CompileState::Running;
        job.cubinArch = arch;
        compiling.insert(job.compileKey + arch.toUtf8());
        m_compilers[free].job = job.id;
        const int timeoutMs =
            buildsExtension(job) ? std::max(m_compileTimeoutMs, m_extensionBuildTimeoutMs) : m_compileTimeoutMs;
        job.compileRequest = m_compilers.at(free).supervisor->sendRequest(request, timeoutMs);
    }
}

QList<qint64> EvaluationQueue::shareCompile(const Job& compiled)
{
    QList<qint64> shared;
    for (Job& job : m_jobs) {
        if (job.id == compiled.id || job.gpu >= 0 || job.compile != CompileState::Waiting ||
            job.compileKey != compiled.compileKey || archFor(job) != compiled.cubinArch)
            continue;
        job.compile = CompileState::Done;
        job.cubin = compiled.cubin;
        job.cubinArch = compiled.cubinArch;
        job.cubinSourceHash = compiled.cubinSourceHash;
        job.compileLog = compiled.compileLog;
        job.cubinKernelFacts = compiled.cubinKernelFacts;
        shared.append(job.id);
    }
    return shared;
}

void EvaluationQueue::onCompileResponse(int compilerIndex, qint64 requestId, const WorkerResponse& response)
{
    const qint64 jobId = std::exchange(m_compilers[compilerIndex].job, 0);
    const qsizetype index = indexOfJob(jobId);
    QList<qint64> built;
    if (index >= 0) {
        Job& job = m_jobs[index];
        if (job.compileRequest == requestId && job.compile == CompileState::Running && job.gpu < 0) {
            job.compile = CompileState::Done;
            built.append(job.id);
            // A failed compile, or an answer without a cuda block (ok_compile false, no hash),
            // attaches nothing: the GPU worker parses and compiles again and reports what it
            // found, as for any other candidate. The hash is the worker's, of the block its
            // parser found: evaluate loads the module only for that same block.
            const CompileInfo compiled = response.compile.value_or(CompileInfo());
            if (response.ok() && compiled.ok && !compiled.cubinB64.isEmpty() && !compiled.sourceHash.isEmpty()) {
                job.cubin = compiled.cubinB64;
                if (!compiled.arch.isEmpty())
                    job.cubinArch = compiled.arch;
                job.compileLog = compiled.log;
                job.cubinSourceHash = compiled.sourceHash;
                job.cubinKernelFacts = WorkerRequests::kernelFactsOf(response.raw);
            }
            // A KernelBench build's outcome is in the extension cache, a failure's too: the
            // same answer's other jobs are not built again.
            built += shareCompile(job);
        }
    }
    scheduleWork();
    // Last: a receiver may submit new jobs from here.
    for (qint64 id : std::as_const(built))
        Q_EMIT jobBuiltAhead(id);
}

void EvaluationQueue::onCompileFailure(int compilerIndex, qint64 requestId)
{
    const qint64 jobId = std::exchange(m_compilers[compilerIndex].job, 0);
    const qsizetype index = indexOfJob(jobId);
    const bool ended =
        index >= 0 && m_jobs.at(index).compileRequest == requestId && m_jobs.at(index).compile == CompileState::Running;
    if (ended)
        m_jobs[index].compile = CompileState::Done; // evaluated uncompiled; the GPU worker decides
    scheduleWork();
    if (ended)
        Q_EMIT jobBuiltAhead(jobId);
}

void EvaluationQueue::failJobsWithoutWorkers()
{
    if (std::any_of(m_gpus.cbegin(), m_gpus.cend(), [](const Gpu& g) { return !g.lost; }))
        return;
    QString why;
    for (const Gpu& gpu : std::as_const(m_gpus))
        why += QStringLiteral("; %1: %2").arg(gpu.target.location(), gpu.lostReason);
    const QList<Job> jobs = m_jobs;
    for (const Job& job : jobs) {
        if (job.gpu >= 0)
            continue;
        m_jobs.removeAt(indexOfJob(job.id));
        ++m_done;
        failLater(job.id, wireName(EvaluationStatus::WorkerLost), QStringLiteral("every worker is lost") + why);
    }
}

void EvaluationQueue::onGpuResponse(int gpuIndex, int slotIndex, qint64 requestId, const WorkerResponse& response)
{
    if (gpuIndex == 0 && slotIndex == 0 && requestId == m_deviceRequest && m_deviceRequest != 0) {
        m_deviceRequest = 0;
        const DeviceFacts device = response.device.value_or(DeviceFacts());
        if (response.ok() && device.available)
            m_arch = device.arch;
        scheduleWork();
        return;
    }
    const qsizetype index = runningJobIndex(gpuIndex, slotIndex, requestId);
    if (index < 0)
        return;
    const ResponseHeader& header = response.header;
    // Its allocation may have failed for the other job's memory: the machine's doing.
    if (header.ok && m_jobs.at(index).besideAnother && response.evaluation &&
        response.evaluation->outOfDeviceMemory()) {
        m_jobs[index].alone = true;
        requeueRunningJob(gpuIndex, slotIndex, index);
        return;
    }
    // Or for memory another process held (a model server on the same GPU, a spare of this queue):
    // evaluated again alone once, then the machine's (gpumemoryelsewhere.h). Only a local GPU's
    // processes can be asked for.
    if (header.ok && response.evaluation && response.evaluation->gpuOutOfMemory &&
        !m_gpus.at(gpuIndex).target.isRemote()) {
        const WorkerSupervisor* slot = m_gpus.at(gpuIndex).gpuSlots.at(slotIndex).supervisor;
        const MemoryElsewhere elsewhere =
            m_memoryElsewhereProbe(response.evaluation->gpuOutOfMemory->pciBusId, slot->answeringWorkerPid());
        if (judgeOutOfMemory(*response.evaluation, elsewhere) == OutOfMemoryFault::Machines) {
            if (!m_jobs.at(index).ranOutElsewhere) {
                m_jobs[index].ranOutElsewhere = true;
                m_jobs[index].alone = true;
                requeueRunningJob(gpuIndex, slotIndex, index);
                return;
            }
            const qint64 id = retireRunningJob(gpuIndex, slotIndex, index);
            Q_EMIT jobFailed(id, wireName(EvaluationStatus::OutOfMemoryElsewhere),
                             describeOutOfMemoryElsewhere(*response.evaluation, elsewhere));
            noteProgress();
            return;
        }
    }
    const qint64 id = retireRunningJob(gpuIndex, slotIndex, index);
    if (!header.ok) {
        // The worker refused the request (an unknown task): no verdict on the candidate.
        Q_EMIT jobFailed(id, header.errorCode.isEmpty() ? wireName(EvaluationStatus::BadRequest) : header.errorCode,
                         header.errorMessage);
    } else {
        const Gpu& gpu = m_gpus.at(gpuIndex);
        // The response as the worker sent it, byte for byte, is what the run store keeps.
        QJsonObject result = response.raw;
        result.insert(QStringLiteral("gpu"), gpu.ordinal);
        result.insert(QStringLiteral("worker"), gpu.target.location());
        result.insert(QStringLiteral("slot"), slotIndex);
        EvaluationResult evaluation = response.evaluation.value_or(EvaluationResult());
        evaluation.raw = result;
        Q_EMIT jobFinished(id, evaluation);
    }
    noteProgress();
}

qsizetype EvaluationQueue::runningJobIndex(int gpuIndex, int slotIndex, qint64 requestId) const
{
    const qsizetype index = indexOfJob(m_gpus.at(gpuIndex).gpuSlots.at(slotIndex).runningJob);
    return index >= 0 && m_jobs.at(index).gpuRequest == requestId ? index : -1;
}

qint64 EvaluationQueue::retireRunningJob(int gpuIndex, int slotIndex, qsizetype jobIndex)
{
    const Job job = m_jobs.takeAt(jobIndex);
    m_gpus[gpuIndex].gpuSlots[slotIndex].runningJob = 0;
    releaseLeaseIfIdle(gpuIndex);
    ++m_done;
    scheduleWork();
    if (job.stderrTail)
        Q_EMIT jobStderrAvailable(job.id, *job.stderrTail, job.stderrDropped);
    return job.id;
}

void EvaluationQueue::requeueRunningJob(int gpuIndex, int slotIndex, qsizetype jobIndex)
{
    Job& job = m_jobs[jobIndex];
    job.besideAnother = false;
    job.gpu = -1;
    job.slot = -1;
    job.gpuRequest = 0;
    job.compile = job.cubin.isEmpty() ? CompileState::None : CompileState::Done;
    job.stderrTail.reset();
    job.stderrDropped = 0;
    m_gpus[gpuIndex].gpuSlots[slotIndex].runningJob = 0;
    releaseLeaseIfIdle(gpuIndex);
    scheduleWork();
}

void EvaluationQueue::releaseLeaseIfIdle(int gpuIndex)
{
    if (!runsGpuJob(m_gpus.at(gpuIndex)))
        releaseLease(gpuIndex);
}

void EvaluationQueue::onGpuFailure(int gpuIndex, int slotIndex, qint64 requestId, const QString& status,
                                   const QString& message)
{
    if (gpuIndex == 0 && slotIndex == 0 && requestId == m_deviceRequest && m_deviceRequest != 0) {
        m_deviceRequest = 0; // compile-ahead stays off, except for jobs that name their arch
        scheduleWork();
        return;
    }
    const qsizetype index = runningJobIndex(gpuIndex, slotIndex, requestId);
    if (index < 0)
        return;
    if (requeueFromLostHost(gpuIndex, slotIndex, index, status, message))
        return;
    // Beside another job it may have waited for that job's GPU work (the quiet lock, the GPU's time).
    if (status == wireName(EvaluationStatus::Timeout) && m_jobs.at(index).besideAnother) {
        m_jobs[index].alone = true;
        requeueRunningJob(gpuIndex, slotIndex, index);
        return;
    }
    const qint64 id = retireRunningJob(gpuIndex, slotIndex, index);
    Q_EMIT jobFailed(id, status, message);
    noteProgress();
}

bool EvaluationQueue::requeueFromLostHost(int gpuIndex, int slotIndex, qsizetype jobIndex, const QString& status,
                                          const QString& message)
{
    Gpu& gpu = m_gpus[gpuIndex];
    // A host is lost when ssh lost it, or when its worker could not start there at all; the
    // candidate's own doing (a crash, a time-out) stays its verdict.
    const WorkerSupervisor* supervisor = gpu.gpuSlots.at(slotIndex).supervisor;
    if (!gpu.target.isRemote() || (!supervisor->connectionLost() && status != wireName(EvaluationStatus::StartFailed)))
        return false;
    gpu.lost = true;
    gpu.lostReason = QStringLiteral("%1: %2").arg(status, message);
    Q_EMIT workerLost(gpu.target.location(), gpu.lostReason);
    if (std::none_of(m_gpus.cbegin(), m_gpus.cend(), [](const Gpu& g) { return !g.lost; }))
        return false; // nowhere to go: the job fails with what the last host said
    // Back to the queue, where it was: nothing was evaluated, nothing is counted.
    requeueRunningJob(gpuIndex, slotIndex, jobIndex);
    return true;
}

bool EvaluationQueue::needsGpu(const Job& job)
{
    return job.request.device != QLatin1String("none") && job.request.device != QLatin1String("cpu");
}

void EvaluationQueue::onLeaseGranted(qint64 ticket)
{
    for (Gpu& gpu : m_gpus) {
        if (gpu.lease != ticket || gpu.leaseHeld)
            continue;
        gpu.leaseHeld = true;
        scheduleWork();
    }
}

void EvaluationQueue::releaseLease(int gpuIndex)
{
    Gpu& gpu = m_gpus[gpuIndex];
    if (gpu.lease == 0)
        return;
    GpuLeases::instance()->release(gpu.lease);
    gpu.lease = 0;
    gpu.leaseHeld = false;
}

} // namespace kwb
