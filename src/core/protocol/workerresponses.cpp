#include "core/protocol/workerresponses.h"

#include "core/protocol/protocoljson.h"

#include <QHash>

#include <algorithm>

namespace kwb {

using namespace protocoljson;

namespace {

QStringList symbolicShape(const QJsonValue& value)
{
    QStringList s;
    for (const QJsonValue& v : value.toArray())
        s.append(v.isString() ? v.toString() : QString::number(qint64(v.toDouble())));
    return s;
}

TaskTensor tensor(const QJsonObject& json)
{
    TaskTensor t;
    t.name = str(json, Key::kName);
    t.kind = str(json, Key::kKind, QStringLiteral("tensor"));
    t.dtype = str(json, Key::kDtype);
    t.generator = str(json, Key::kGenerator);
    t.init = str(json, Key::kInit);
    t.shape = symbolicShape(at(json, Key::kShape));
    t.full = shape(at(json, Key::kFull));
    t.smoke = shape(at(json, Key::kSmoke));
    t.value = at(json, Key::kValue);
    t.buffer = flag(json, Key::kBuffer);
    return t;
}

} // namespace

ResponseHeader decodeHeader(const QJsonObject& r)
{
    ResponseHeader h;
    h.id = at(r, Field::kId);
    h.type = str(r, Field::kType);
    h.ok = at(r, Key::kOk) == QJsonValue(true);
    const QJsonObject error = obj(r, Key::kError);
    h.errorCode = str(error, Key::kCode);
    h.errorMessage = str(error, Key::kMessage);
    h.workerHealthy = at(r, Key::kWorkerHealthy) != QJsonValue(false);
    return h;
}

ResponseType responseType(const QJsonObject& response)
{
    static const QHash<QString, ResponseType> types = {
        {QLatin1String(Request::kHello), ResponseType::Hello},
        {QLatin1String(Request::kWarm), ResponseType::Warm},
        {QLatin1String(Request::kTasks), ResponseType::Tasks},
        {QLatin1String(Request::kDevice), ResponseType::Device},
        {QLatin1String(Request::kAnalyze), ResponseType::Analyze},
        {QLatin1String(Request::kProfile), ResponseType::Profile},
        {QLatin1String(Request::kCompile), ResponseType::Compile},
        {QLatin1String(Request::kEvaluate), ResponseType::Evaluate},
        {QLatin1String(Request::kRunReference), ResponseType::RunReference},
        {QLatin1String(Request::kShutdown), ResponseType::Shutdown},
    };
    return types.value(str(response, Field::kType), ResponseType::Unknown);
}

QStringList HelloInfo::profileNames() const
{
    QStringList names;
    for (const ProfileSettings& p : profiles)
        names.append(p.name);
    return names;
}

const ProfileSettings* HelloInfo::profile(const QString& name) const
{
    for (const ProfileSettings& p : profiles)
        if (p.name == name)
            return &p;
    return nullptr;
}

QString HelloInfo::unknownProfileError(const QString& name) const
{
    if (profiles.isEmpty() || profile(name))
        return QString();
    return QStringLiteral("unknown protocol profile '%1': the worker knows %2")
        .arg(name, profileNames().join(QStringLiteral(", ")));
}

HelloInfo decodeHello(const QJsonObject& r)
{
    HelloInfo h;
    h.raw = r;
    h.ok = at(r, Key::kOk) == QJsonValue(true);
    const QJsonValue protocol = at(r, Key::kProtocol);
    if (protocol.isDouble())
        h.protocol = protocol.toInt(-1); // -1: not an integer
    h.worker = str(r, Key::kWorker);
    h.torch = str(r, Key::kTorch);
    h.cudaRuntime = str(r, Key::kCudaRuntime);
    h.nvrtc = str(r, Key::kNvrtc);
    h.driver = str(r, Key::kDriver);
    h.tasksDir = str(r, Field::kTasksDir);
    h.cudaDeviceCount = integer(r, Key::kCudaDeviceCount);
    h.defaultProfile = str(r, Key::kDefaultProfile);
    h.quietLockAnnounced = r.contains(QLatin1String(Key::kGpuQuietLock));
    h.quietLock = str(r, Key::kGpuQuietLock);
    // `profiles`: a list of settings objects with their names, or an object keyed by name.
    const QJsonValue profiles = at(r, Key::kProfiles);
    if (profiles.isArray()) {
        for (const QJsonValue& v : profiles.toArray()) {
            if (v.isString()) {
                ProfileSettings p;
                p.name = v.toString();
                h.profiles.append(p);
            } else if (v.isObject()) {
                h.profiles.append(decodeProfileSettings(v.toObject()));
            }
        }
    } else if (profiles.isObject()) {
        const QJsonObject byName = profiles.toObject();
        for (auto it = byName.begin(); it != byName.end(); ++it) {
            ProfileSettings p = decodeProfileSettings(it.value().toObject());
            if (p.name.isEmpty())
                p.name = it.key();
            h.profiles.append(p);
        }
    }
    return h;
}

WarmInfo decodeWarm(const QJsonObject& r)
{
    WarmInfo w;
    w.alreadyWarm = flag(r, Key::kAlreadyWarm);
    w.device = str(r, Field::kDevice);
    w.why = str(r, Key::kWhy);
    if (const QJsonValue ms = at(r, Key::kWarmMs); ms.isObject()) {
        QMap<QString, double> parts;
        const QJsonObject byPart = ms.toObject();
        for (auto it = byPart.begin(); it != byPart.end(); ++it)
            parts.insert(it.key(), optNumber(it.value()).value_or(0.0));
        w.ms = parts;
    }
    return w;
}

TaskSpec decodeTaskSpec(const QJsonObject& json)
{
    TaskSpec t;
    t.json = json;
    t.id = str(json, Field::kId);
    t.level = integer(json, Key::kLevel);
    t.number = integer(json, Key::kNumber);
    t.title = str(json, Key::kTitle);
    t.description = str(json, Key::kDescription);
    t.source = str(json, Key::kSource);
    t.forward = str(json, Key::kForward);
    t.path = str(json, Key::kPath);
    const auto dimsOf = [](const QJsonObject& o) {
        QList<TaskDim> dims;
        for (const QJsonValue& v : arr(o, Key::kDims)) {
            const QJsonObject d = v.toObject();
            dims.append(TaskDim{str(d, Key::kName), qint64(number(d, Key::kFull)), qint64(number(d, Key::kSmoke))});
        }
        return dims;
    };
    t.dims = dimsOf(json);
    for (const QJsonValue& v : arr(json, Key::kShapeSets)) {
        const QJsonObject set = v.toObject();
        t.shapeSets.append(TaskShapeSet{str(set, Key::kName), at(set, Key::kHeldOut).toBool(), dimsOf(set)});
    }
    for (const QJsonValue& v : arr(json, Key::kInputs))
        t.inputs.append(tensor(v.toObject()));
    for (const QJsonValue& v : arr(json, Key::kParams))
        t.params.append(tensor(v.toObject()));
    const QJsonObject tolerance = obj(json, Key::kTolerance);
    t.atol = optNumber(tolerance, Key::kAtol);
    t.rtol = optNumber(tolerance, Key::kRtol);
    t.kernelBenchOnly = str(json, Key::kKernelBenchOnly);
    t.initInputs = arr(json, Key::kInitInputs);
    t.referencePython = str(json, Key::kReferencePython);
    return t;
}

QString TaskShapeSet::differencesFrom(const QList<TaskDim>& base, bool smoke) const
{
    QStringList parts;
    for (const TaskDim& d : dims) {
        const qint64 value = smoke ? d.smoke : d.full;
        const auto same = std::find_if(base.begin(), base.end(), [&](const TaskDim& b) {
            return b.name == d.name && (smoke ? b.smoke : b.full) == value;
        });
        if (same == base.end())
            parts << d.name + QLatin1Char('=') + QString::number(value);
    }
    return parts.join(QStringLiteral(", "));
}

QString TaskLoadError::toString() const
{
    QString text = path;
    if (!field.isEmpty())
        text += (text.isEmpty() ? QString() : QStringLiteral(": ")) + field;
    return text + (text.isEmpty() ? QString() : QStringLiteral(": ")) + message;
}

TaskList decodeTaskList(const QJsonObject& r)
{
    TaskList list;
    list.ok = at(r, Key::kOk) == QJsonValue(true);
    for (const QJsonValue& v : arr(r, Key::kTasks))
        list.tasks.append(decodeTaskSpec(v.toObject()));
    for (const QJsonValue& v : arr(r, Key::kErrors)) {
        const QJsonObject e = v.toObject();
        list.errors.append(TaskLoadError{str(e, Key::kPath), str(e, Key::kField), str(e, Key::kMessage)});
    }
    return list;
}

QString TaskOp::shortName() const
{
    const qsizetype colons = op.lastIndexOf(QLatin1String("::"));
    return colons < 0 ? op : op.mid(colons + 2);
}

AnalyzeResult decodeAnalyze(const QJsonObject& r)
{
    AnalyzeResult a;
    a.task = str(r, Field::kTask);
    a.scale = str(r, Field::kScale);
    a.failed = r.contains(QLatin1String(Key::kError));
    a.errorMessage = str(obj(r, Key::kError), Key::kMessage);
    a.hasOps = at(r, Key::kOps).isArray();
    for (const QJsonValue& v : arr(r, Key::kOps)) {
        const QJsonObject json = v.toObject();
        TaskOp op;
        op.index = integer(json, Key::kIndex, int(a.ops.size()));
        op.op = str(json, Key::kOp);
        op.category = str(json, Key::kCategory);
        for (const QJsonValue& input : arr(json, Key::kInputs))
            op.inputs.append(shape(input));
        op.output = shape(at(json, Key::kOutput));
        op.outputCount = std::max(1, integer(json, Key::kOutputCount, 1));
        op.flops = number(json, Key::kFlops);
        op.bytes = number(json, Key::kBytes);
        op.line = integer(json, Key::kLine);
        a.ops.append(op);
    }
    a.hasOutputShape = at(r, Key::kOutputShape).isArray();
    a.outputShape = shape(at(r, Key::kOutputShape));
    a.hasTotals = at(r, Key::kFlops).isDouble();
    a.flops = number(r, Key::kFlops);
    a.bytesUnfused = number(r, Key::kBytesUnfused);
    a.hasBytesUnfused = r.contains(QLatin1String(Key::kBytesUnfused));
    a.bytesFused = number(r, Key::kBytesFused);
    a.inputBytes = optNumber(r, Key::kInputBytes);
    a.paramBytes = optNumber(r, Key::kParamBytes);
    a.outputBytes = optNumber(r, Key::kOutputBytes);
    a.boundFlops = optNumber(r, Key::kBoundFlops);
    const std::optional<double> unfused = optNumber(r, Key::kIntensityUnfused);
    const std::optional<double> fused = optNumber(r, Key::kIntensityFused);
    a.intensityUnfused = unfused ? *unfused : (a.bytesUnfused > 0 ? a.flops / a.bytesUnfused : 0);
    a.intensityFused = fused ? *fused : (a.bytesFused > 0 ? a.flops / a.bytesFused : 0);
    a.opCount = integer(r, Key::kOpCount, int(a.ops.size()));
    for (const QJsonValue& v : arr(r, Key::kUncounted)) {
        const QJsonObject u = v.toObject();
        a.uncounted.append(UncountedOp{integer(u, Key::kIndex, -1), str(u, Key::kOp), integer(u, Key::kLine),
                                       str(u, Key::kReason), at(u, Key::kShapeKnown).toBool()});
    }
    return a;
}

QString AnalyzeResult::uncountedText() const
{
    QStringList names;
    for (const UncountedOp& u : uncounted)
        if (!names.contains(u.op))
            names.append(u.op);
    return names.isEmpty() ? QString() : QStringLiteral("cannot count: ") + names.join(QStringLiteral(", "));
}

ProfileResult decodeProfile(const QJsonObject& r)
{
    ProfileResult p;
    p.totalNs = optNumber(r, Key::kTotalNs);
    for (const QJsonValue& v : arr(r, Key::kOps)) {
        const QJsonObject o = v.toObject();
        // No index: launched outside any top-level op (-1), as for kernels' op_index.
        p.ops.append(ProfileOp{integer(o, Key::kIndex, -1), str(o, Key::kOp), number(o, Key::kTimeNs),
                               number(o, Key::kShare), integer(o, Key::kKernels)});
    }
    for (const QJsonValue& v : arr(r, Key::kKernels)) {
        const QJsonObject k = v.toObject();
        p.kernels.append(ProfileKernel{str(k, Key::kName), str(k, Key::kOp), integer(k, Key::kOpIndex, -1),
                                       integer(k, Key::kCalls), number(k, Key::kTimeNs), number(k, Key::kShare)});
    }
    return p;
}

ReferenceRun decodeReferenceRun(const QJsonObject& r)
{
    ReferenceRun run;
    run.outputShape = shape(at(r, Key::kOutputShape));
    run.dtype = str(r, Key::kDtype);
    run.min = optNumber(r, Key::kMin);
    run.max = optNumber(r, Key::kMax);
    run.mean = optNumber(r, Key::kMean);
    run.ms = optNumber(r, Key::kMs);
    run.finite = flag(r, Key::kFinite);
    return run;
}

} // namespace kwb
