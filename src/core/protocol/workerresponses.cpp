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
    t.name = str(json, "name");
    t.kind = str(json, "kind", QStringLiteral("tensor"));
    t.dtype = str(json, "dtype");
    t.generator = str(json, "generator");
    t.init = str(json, "init");
    t.shape = symbolicShape(at(json, "shape"));
    t.full = shape(at(json, "full"));
    t.smoke = shape(at(json, "smoke"));
    t.value = at(json, "value");
    t.buffer = flag(json, "buffer");
    return t;
}

} // namespace

ResponseHeader decodeHeader(const QJsonObject& r)
{
    ResponseHeader h;
    h.id = at(r, "id");
    h.type = str(r, "type");
    h.ok = at(r, "ok") == QJsonValue(true);
    const QJsonObject error = obj(r, "error");
    h.errorCode = str(error, "code");
    h.errorMessage = str(error, "message");
    h.workerHealthy = at(r, "worker_healthy") != QJsonValue(false);
    return h;
}

ResponseType responseType(const QJsonObject& response)
{
    static const QHash<QString, ResponseType> types = {
        {QStringLiteral("hello"), ResponseType::Hello},       {QStringLiteral("warm"), ResponseType::Warm},
        {QStringLiteral("tasks"), ResponseType::Tasks},
        {QStringLiteral("device"), ResponseType::Device},     {QStringLiteral("analyze"), ResponseType::Analyze},
        {QStringLiteral("profile"), ResponseType::Profile},   {QStringLiteral("compile"), ResponseType::Compile},
        {QStringLiteral("evaluate"), ResponseType::Evaluate}, {QStringLiteral("run_reference"), ResponseType::RunReference},
        {QStringLiteral("shutdown"), ResponseType::Shutdown},
    };
    return types.value(str(response, "type"), ResponseType::Unknown);
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
    h.ok = at(r, "ok") == QJsonValue(true);
    const QJsonValue protocol = at(r, "protocol");
    if (protocol.isDouble())
        h.protocol = protocol.toInt(-1); // -1: not an integer
    h.worker = str(r, "worker");
    h.torch = str(r, "torch");
    h.cudaRuntime = str(r, "cuda_runtime");
    h.nvrtc = str(r, "nvrtc");
    h.driver = str(r, "driver");
    h.tasksDir = str(r, "tasks_dir");
    h.cudaDeviceCount = integer(r, "cuda_device_count");
    h.defaultProfile = str(r, "default_profile");
    h.quietLockAnnounced = r.contains(QLatin1String("gpu_quiet_lock"));
    h.quietLock = str(r, "gpu_quiet_lock");
    // `profiles`: a list of settings objects with their names, or an object keyed by name.
    const QJsonValue profiles = at(r, "profiles");
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
    w.alreadyWarm = flag(r, "already_warm");
    w.device = str(r, "device");
    w.why = str(r, "why");
    if (const QJsonValue ms = at(r, "warm_ms"); ms.isObject()) {
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
    t.id = str(json, "id");
    t.level = integer(json, "level");
    t.number = integer(json, "number");
    t.title = str(json, "title");
    t.description = str(json, "description");
    t.source = str(json, "source");
    t.forward = str(json, "forward");
    t.path = str(json, "path");
    for (const QJsonValue& v : arr(json, "dims")) {
        const QJsonObject d = v.toObject();
        t.dims.append(TaskDim{str(d, "name"), qint64(number(d, "full")), qint64(number(d, "smoke"))});
    }
    for (const QJsonValue& v : arr(json, "inputs"))
        t.inputs.append(tensor(v.toObject()));
    for (const QJsonValue& v : arr(json, "params"))
        t.params.append(tensor(v.toObject()));
    const QJsonObject tolerance = obj(json, "tolerance");
    t.atol = optNumber(tolerance, "atol");
    t.rtol = optNumber(tolerance, "rtol");
    t.kernelBenchOnly = str(json, "kernelbench_only");
    return t;
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
    list.ok = at(r, "ok") == QJsonValue(true);
    for (const QJsonValue& v : arr(r, "tasks"))
        list.tasks.append(decodeTaskSpec(v.toObject()));
    for (const QJsonValue& v : arr(r, "errors")) {
        const QJsonObject e = v.toObject();
        list.errors.append(TaskLoadError{str(e, "path"), str(e, "field"), str(e, "message")});
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
    a.task = str(r, "task");
    a.scale = str(r, "scale");
    a.failed = r.contains(QLatin1String("error"));
    a.errorMessage = str(obj(r, "error"), "message");
    a.hasOps = at(r, "ops").isArray();
    for (const QJsonValue& v : arr(r, "ops")) {
        const QJsonObject json = v.toObject();
        TaskOp op;
        op.index = integer(json, "index", int(a.ops.size()));
        op.op = str(json, "op");
        op.category = str(json, "category");
        for (const QJsonValue& input : arr(json, "inputs"))
            op.inputs.append(shape(input));
        op.output = shape(at(json, "output"));
        op.outputCount = std::max(1, integer(json, "output_count", 1));
        op.flops = number(json, "flops");
        op.bytes = number(json, "bytes");
        op.line = integer(json, "line");
        a.ops.append(op);
    }
    a.hasOutputShape = at(r, "output_shape").isArray();
    a.outputShape = shape(at(r, "output_shape"));
    a.hasTotals = at(r, "flops").isDouble();
    a.flops = number(r, "flops");
    a.bytesUnfused = number(r, "bytes_unfused");
    a.hasBytesUnfused = r.contains(QLatin1String("bytes_unfused"));
    a.bytesFused = number(r, "bytes_fused");
    a.inputBytes = optNumber(r, "input_bytes");
    a.paramBytes = optNumber(r, "param_bytes");
    a.outputBytes = optNumber(r, "output_bytes");
    const std::optional<double> unfused = optNumber(r, "intensity_unfused");
    const std::optional<double> fused = optNumber(r, "intensity_fused");
    a.intensityUnfused = unfused ? *unfused : (a.bytesUnfused > 0 ? a.flops / a.bytesUnfused : 0);
    a.intensityFused = fused ? *fused : (a.bytesFused > 0 ? a.flops / a.bytesFused : 0);
    a.opCount = integer(r, "op_count", int(a.ops.size()));
    for (const QJsonValue& v : arr(r, "uncounted")) {
        const QJsonObject u = v.toObject();
        a.uncounted.append(UncountedOp{integer(u, "index", -1), str(u, "op"), integer(u, "line"), str(u, "reason"),
                                       at(u, "shape_known").toBool()});
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
    p.totalNs = optNumber(r, "total_ns");
    for (const QJsonValue& v : arr(r, "ops")) {
        const QJsonObject o = v.toObject();
        // No index: launched outside any top-level op (-1), as for kernels' op_index.
        p.ops.append(ProfileOp{integer(o, "index", -1), str(o, "op"), number(o, "time_ns"), number(o, "share"),
                               integer(o, "kernels")});
    }
    for (const QJsonValue& v : arr(r, "kernels")) {
        const QJsonObject k = v.toObject();
        p.kernels.append(ProfileKernel{str(k, "name"), str(k, "op"), integer(k, "op_index", -1), integer(k, "calls"),
                                       number(k, "time_ns"), number(k, "share")});
    }
    return p;
}

ReferenceRun decodeReferenceRun(const QJsonObject& r)
{
    ReferenceRun run;
    run.outputShape = shape(at(r, "output_shape"));
    run.dtype = str(r, "dtype");
    run.min = optNumber(r, "min");
    run.max = optNumber(r, "max");
    run.mean = optNumber(r, "mean");
    run.ms = optNumber(r, "ms");
    run.finite = flag(r, "finite");
    return run;
}

} // namespace kwb
