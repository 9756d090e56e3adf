#include "core/tasks/gputable.h"

#include <QCoreApplication>
#include <QDebug>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QJsonValue>
#include <QMap>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

namespace kwb {

namespace {

Roof roof(Roof::Kind kind, Roof::Origin origin, double value, const QString& label, const QString& note = QString())
{
    Roof r;
    r.kind = kind;
    r.origin = origin;
    r.value = value;
    r.label = label;
    r.note = note;
    return r;
}

QString defaultLabel(Roof::Kind kind)
{
    switch (kind) {
    case Roof::Kind::Memory: return QStringLiteral("HBM");
    case Roof::Kind::Fp32: return QStringLiteral("FP32");
    case Roof::Kind::Tf32Tensor: return QStringLiteral("TF32 tensor");
    case Roof::Kind::Bf16Tensor: return QStringLiteral("BF16/FP16 tensor");
    case Roof::Kind::Fp16Tensor: return QStringLiteral("FP16 tensor");
    }
    return QString();
}

// The GPU table's file (gpus/datasheets.json; docs/roofline.md "The GPU table").
constexpr int kTableFormat = 1;

struct KindName
{
    const char* name;
    Roof::Kind kind;
};
constexpr KindName kKinds[] = {{"memory", Roof::Kind::Memory},
                               {"fp32", Roof::Kind::Fp32},
                               {"tf32_tensor", Roof::Kind::Tf32Tensor},
                               {"bf16_tensor", Roof::Kind::Bf16Tensor},
                               {"fp16_tensor", Roof::Kind::Fp16Tensor}};

struct Unit
{
    const char* name;
    double scale; ///< to GB/s, GFLOP/s or bytes
};
constexpr Unit kMemoryUnits[] = {{"GB/s", 1.0}, {"TB/s", 1000.0}};
constexpr Unit kComputeUnits[] = {{"GFLOP/s", 1.0}, {"TFLOP/s", 1000.0}};
constexpr Unit kSizeUnits[] = {{"KiB", 1024.0}, {"MiB", 1024.0 * 1024.0}};

template <std::size_t N>
QString unitNames(const Unit (&units)[N])
{
    QStringList names;
    for (const Unit& u : units)
        names << QString::fromLatin1(u.name);
    return names.join(QStringLiteral(" or "));
}

template <std::size_t N>
const Unit* findUnit(const Unit (&units)[N], const QString& name)
{
    for (const Unit& u : units)
        if (name == QLatin1String(u.name))
            return &u;
    return nullptr;
}

QString kindOfValue(const QJsonValue& v)
{
    switch (v.type()) {
    case QJsonValue::Null: return QStringLiteral("null");
    case QJsonValue::Bool: return QStringLiteral("true/false");
    case QJsonValue::Double: return QStringLiteral("a number");
    case QJsonValue::String: return QStringLiteral("a string");
    case QJsonValue::Array: return QStringLiteral("an array");
    case QJsonValue::Object: return QStringLiteral("an object");
    case QJsonValue::Undefined: break;
    }
    return QStringLiteral("nothing");
}

QString quoted(const QString& text)
{
    return QLatin1Char('"') + text + QLatin1Char('"');
}

/// Reads the table; the first error stops it, naming the file, the entry and the field.
class TableParser
{
public:
    explicit TableParser(const QString& origin)
        : m_origin(origin)
    {}

    GpuTableLoad parse(const QByteArray& json)
    {
        GpuTableLoad out;
        if (!parseDocument(json, &out.gpus)) {
            out.gpus.clear();
            out.error = m_error;
        }
        return out;
    }

private:
    QString m_origin;
    QString m_error;
    QMap<QString, QString> m_sources; ///< key -> title

    bool fail(const QString& where, const QString& what)
    {
        m_error = where.isEmpty() ? QStringLiteral("%1: %2").arg(m_origin, what)
                                  : QStringLiteral("%1: %2: %3").arg(m_origin, where, what);
        return false;
    }

    static QString join(const QString& where, const QString& field)
    {
        if (where.isEmpty())
            return field;
        return where.endsWith(QLatin1String(": ")) ? where + field : where + QLatin1Char('.') + field;
    }

    bool onlyFields(const QJsonObject& o, const QString& where, std::initializer_list<const char*> allowed)
    {
        for (auto it = o.begin(); it != o.end(); ++it) {
            bool known = false;
            for (const char* name : allowed)
                known = known || it.key() == QLatin1String(name);
            if (!known) {
                QStringList names;
                for (const char* name : allowed)
                    names << QString::fromLatin1(name);
                return fail(join(where, it.key()),
                            QStringLiteral("unknown field (known: %1)").arg(names.join(QStringLiteral(", "))));
            }
        }
        return true;
    }

    bool object(const QJsonValue& v, const QString& where, QJsonObject* out)
    {
        if (!v.isObject())
            return fail(where, QStringLiteral("must be an object, not %1").arg(kindOfValue(v)));
        *out = v.toObject();
        return true;
    }

    /// A string field; a missing optional one leaves *out as it is.
    bool string(const QJsonObject& o, const char* field, const QString& where, bool required, QString* out)
    {
        const QString path = join(where, QString::fromLatin1(field));
        const QJsonValue v = o.value(QLatin1String(field));
        if (v.isUndefined()) {
            if (required)
                return fail(path, QStringLiteral("missing"));
            return true;
        }
        if (!v.isString())
            return fail(path, QStringLiteral("must be a string, not %1").arg(kindOfValue(v)));
        if (v.toString().trimmed().isEmpty())
            return fail(path, QStringLiteral("must not be empty"));
        *out = v.toString();
        return true;
    }

    bool positiveNumber(const QJsonObject& o, const char* field, const QString& where, double* out)
    {
        const QString path = join(where, QString::fromLatin1(field));
        const QJsonValue v = o.value(QLatin1String(field));
        if (v.isUndefined())
            return fail(path, QStringLiteral("missing"));
        if (!v.isDouble())
            return fail(path, QStringLiteral("must be a number, not %1").arg(kindOfValue(v)));
        const double d = v.toDouble();
        if (!std::isfinite(d) || !(d > 0))
            return fail(path, QStringLiteral("must be a number above 0, not %1").arg(d));
        *out = d;
        return true;
    }

    bool source(const QJsonObject& o, const QString& where, QString* title)
    {
        QString key;
        if (!string(o, "source", where, true, &key))
            return false;
        if (!m_sources.contains(key)) {
            return fail(join(where, QStringLiteral("source")),
                        QStringLiteral("%1 is not one of the file's sources (%2)")
                            .arg(quoted(key), QStringList(m_sources.keys()).join(QStringLiteral(", "))));
        }
        *title = m_sources.value(key);
        return true;
    }

    template <std::size_t N>
    bool unit(const QJsonObject& o, const QString& where, const Unit (&units)[N], const QString& what, double* scale)
    {
        QString name;
        if (!string(o, "unit", where, true, &name))
            return false;
        const Unit* u = findUnit(units, name);
        if (!u)
            return fail(join(where, QStringLiteral("unit")),
                        QStringLiteral("%1 is not a unit of %2 (%3)").arg(quoted(name), what, unitNames(units)));
        *scale = u->scale;
        return true;
    }

    bool parseDocument(const QByteArray& json, QList<GpuRoofs>* gpus)
    {
        QJsonParseError parseError;
        const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
        if (parseError.error != QJsonParseError::NoError) {
            const QByteArray before = json.left(parseError.offset);
            const int line = int(before.count('\n')) + 1;
            const int column = int(before.size() - (before.lastIndexOf('\n') + 1)) + 1;
            m_error = QStringLiteral("%1:%2:%3: not JSON: %4")
                          .arg(m_origin)
                          .arg(line)
                          .arg(column)
                          .arg(parseError.errorString());
            return false;
        }
        if (!doc.isObject())
            return fail(QString(), QStringLiteral("must be a JSON object with format, sources and gpus"));
        const QJsonObject top = doc.object();
        if (!onlyFields(top, QString(), {"format", "about", "sources", "gpus"}))
            return false;
        const QJsonValue format = top.value(QLatin1String("format"));
        if (format.isUndefined())
            return fail(QStringLiteral("format"),
                        QStringLiteral("missing (this version reads format %1)").arg(kTableFormat));
        if (!format.isDouble() || format.toDouble() != kTableFormat)
            return fail(QStringLiteral("format"),
                        QStringLiteral("%1 is not a format this version reads (%2)")
                            .arg(format.isDouble() ? QString::number(format.toDouble()) : kindOfValue(format))
                            .arg(kTableFormat));

        QJsonObject sources;
        if (!object(top.value(QLatin1String("sources")), QStringLiteral("sources"), &sources))
            return false;
        for (auto it = sources.begin(); it != sources.end(); ++it) {
            const QString where = QStringLiteral("sources.%1").arg(it.key());
            QJsonObject s;
            if (!object(it.value(), where, &s) || !onlyFields(s, where, {"title", "url", "comment"}))
                return false;
            QString title, url;
            if (!string(s, "title", where, true, &title) || !string(s, "url", where, true, &url))
                return false;
            m_sources.insert(it.key(), title);
        }

        const QJsonValue list = top.value(QLatin1String("gpus"));
        if (!list.isArray())
            return fail(QStringLiteral("gpus"),
                        list.isUndefined() ? QStringLiteral("missing")
                                           : QStringLiteral("must be an array, not %1").arg(kindOfValue(list)));
        const QJsonArray entries = list.toArray();
        if (entries.isEmpty())
            return fail(QStringLiteral("gpus"), QStringLiteral("no entry"));
        for (int i = 0; i < entries.size(); ++i) {
            GpuRoofs g;
            if (!parseEntry(entries.at(i), i, *gpus, &g))
                return false;
            gpus->append(g);
        }
        return true;
    }

    bool parseEntry(const QJsonValue& value, int index, const QList<GpuRoofs>& before, GpuRoofs* g)
    {
        QString entry = QStringLiteral("gpus[%1]").arg(index);
        QJsonObject o;
        if (!object(value, entry, &o))
            return false;
        // The key first: every later error names the entry by it too.
        if (!string(o, "key", entry + QStringLiteral(": "), true, &g->key))
            return false;
        static const QRegularExpression keyPattern(QStringLiteral("^[a-z0-9][a-z0-9._-]*$"));
        if (!keyPattern.match(g->key).hasMatch())
            return fail(entry + QStringLiteral(": key"),
                        QStringLiteral("%1 must be lower-case letters, digits, '.', '_' and '-'").arg(quoted(g->key)));
        if (g->key == QLatin1String("current"))
            return fail(entry + QStringLiteral(": key"),
                        QStringLiteral("\"current\" is the worker's GPU, not a table key"));
        for (const GpuRoofs& other : before)
            if (other.key == g->key)
                return fail(entry + QStringLiteral(": key"),
                            QStringLiteral("%1 is already an earlier entry's").arg(quoted(g->key)));
        entry += QStringLiteral(" (%1): ").arg(g->key);

        if (!onlyFields(o, entry, {"key", "name", "device_names", "citation", "sm_count", "l2", "roofs", "comment"}))
            return false;
        if (!string(o, "name", entry, true, &g->name) || !string(o, "citation", entry, true, &g->citation))
            return false;

        const QJsonValue names = o.value(QLatin1String("device_names"));
        if (!names.isUndefined()) {
            if (!names.isArray())
                return fail(entry + QStringLiteral("device_names"),
                            QStringLiteral("must be an array of regular expressions, not %1").arg(kindOfValue(names)));
            const QJsonArray patterns = names.toArray();
            for (int k = 0; k < patterns.size(); ++k) {
                const QString where = entry + QStringLiteral("device_names[%1]").arg(k);
                if (!patterns.at(k).isString() || patterns.at(k).toString().isEmpty())
                    return fail(where,
                                QStringLiteral("must be a non-empty string, not %1").arg(kindOfValue(patterns.at(k))));
                const QRegularExpression re(patterns.at(k).toString(), QRegularExpression::CaseInsensitiveOption);
                if (!re.isValid())
                    return fail(where, QStringLiteral("%1 is not a regular expression: %2 at offset %3")
                                           .arg(quoted(re.pattern()), re.errorString())
                                           .arg(re.patternErrorOffset()));
                g->deviceNames << re.pattern();
            }
        }

        // sm_count: a whole number.
        {
            QJsonObject sm;
            const QString where = entry + QStringLiteral("sm_count");
            QString title;
            double count = 0;
            if (!object(o.value(QLatin1String("sm_count")), where, &sm) ||
                !onlyFields(sm, where, {"value", "source", "comment"}) || !positiveNumber(sm, "value", where, &count) ||
                !source(sm, where, &title))
                return false;
            if (count != std::floor(count) || count > 1e6)
                return fail(where + QStringLiteral(".value"),
                            QStringLiteral("must be a whole number of SMs, not %1").arg(count));
            g->smCount = int(count);
        }
        // l2: KiB or MiB, a whole number of bytes.
        {
            QJsonObject l2;
            const QString where = entry + QStringLiteral("l2");
            QString title;
            double size = 0, scale = 0;
            if (!object(o.value(QLatin1String("l2")), where, &l2) ||
                !onlyFields(l2, where, {"value", "unit", "source", "comment"}) ||
                !positiveNumber(l2, "value", where, &size) ||
                !unit(l2, where, kSizeUnits, QStringLiteral("a cache size"), &scale) || !source(l2, where, &title))
                return false;
            const double bytes = size * scale;
            if (bytes != std::floor(bytes) || bytes > 1e15)
                return fail(where + QStringLiteral(".value"), QStringLiteral("%1 %2 is not a whole number of bytes")
                                                                  .arg(size)
                                                                  .arg(l2.value(QLatin1String("unit")).toString()));
            g->l2Bytes = qint64(bytes);
        }

        const QJsonValue roofs = o.value(QLatin1String("roofs"));
        if (!roofs.isArray())
            return fail(entry + QStringLiteral("roofs"),
                        roofs.isUndefined() ? QStringLiteral("missing")
                                            : QStringLiteral("must be an array, not %1").arg(kindOfValue(roofs)));
        const QJsonArray roofList = roofs.toArray();
        for (int k = 0; k < roofList.size(); ++k) {
            Roof r;
            if (!parseRoof(roofList.at(k), entry + QStringLiteral("roofs[%1]").arg(k), &r))
                return false;
            g->roofs.append(r);
        }
        if (!g->primaryMemory() || !g->primaryFp32())
            return fail(entry + QStringLiteral("roofs"), QStringLiteral("needs a memory roof and an fp32 roof"));
        return true;
    }

    bool parseRoof(const QJsonValue& value, const QString& where, Roof* r)
    {
        QJsonObject o;
        if (!object(value, where, &o) ||
            !onlyFields(o, where, {"kind", "label", "value", "unit", "source", "note", "comment"}))
            return false;
        QString kind;
        if (!string(o, "kind", where, true, &kind))
            return false;
        bool known = false;
        QStringList kinds;
        for (const KindName& k : kKinds) {
            kinds << QString::fromLatin1(k.name);
            if (kind == QLatin1String(k.name)) {
                r->kind = k.kind;
                known = true;
            }
        }
        if (!known)
            return fail(
                join(where, QStringLiteral("kind")),
                QStringLiteral("%1 is not a roof kind (%2)").arg(quoted(kind), kinds.join(QStringLiteral(", "))));
        double number = 0, scale = 0;
        if (!positiveNumber(o, "value", where, &number))
            return false;
        const bool memory = r->kind == Roof::Kind::Memory;
        if (memory ? !unit(o, where, kMemoryUnits, QStringLiteral("a memory roof"), &scale)
                   : !unit(o, where, kComputeUnits, QStringLiteral("a compute roof"), &scale))
            return false;
        r->origin = Roof::Origin::Datasheet;
        r->value = number * scale;
        r->label = defaultLabel(r->kind);
        return string(o, "label", where, false, &r->label) && string(o, "note", where, false, &r->note) &&
               source(o, where, &r->source);
    }
};

const GpuRoofs* findIn(const QList<GpuRoofs>& gpus, const QString& key)
{
    for (const GpuRoofs& g : gpus)
        if (g.key == key)
            return &g;
    return nullptr;
}

struct LoadedTable
{
    QString path;
    GpuTableLoad load;
};

const LoadedTable& loadedTable()
{
    static const LoadedTable table = [] {
        LoadedTable t;
        t.path = defaultGpuTablePath();
        t.load = loadGpuTables(t.path, userGpuTableDir());
        if (!t.load.ok())
            qWarning().noquote() << QStringLiteral("GPU table: %1").arg(t.load.error);
        for (const QString& skipped : std::as_const(t.load.skipped))
            qWarning().noquote() << QStringLiteral("GPU table: left out: %1").arg(skipped);
        return t;
    }();
    return table;
}

QString rateText(double value, const QString& unitPerSecond)
{
    // value is in giga-units per second: show T above 1000 G, with three significant digits.
    if (value >= 1000.0)
        return QStringLiteral("%1 T%2").arg(QString::number(value / 1000.0, 'g', 3), unitPerSecond);
    return QStringLiteral("%1 G%2").arg(QString::number(value, 'g', 3), unitPerSecond);
}

} // namespace

QString Roof::originText() const
{
    switch (origin) {
    case Origin::Datasheet: return QStringLiteral("datasheet");
    case Origin::Theoretical: return QStringLiteral("theoretical");
    case Origin::Measured: return QStringLiteral("measured");
    }
    return QString();
}

QString Roof::displayText() const
{
    const QString rate =
        kind == Kind::Memory ? rateText(value, QStringLiteral("B/s")) : rateText(value, QStringLiteral("FLOP/s"));
    return QStringLiteral("%1 %2 (%3)").arg(label, rate, originText());
}

bool GpuRoofs::isValid() const
{
    return primaryMemory() != nullptr && primaryFp32() != nullptr;
}

namespace {
const Roof* primaryOf(const QList<Roof>& roofs, Roof::Kind kind)
{
    const Roof* first = nullptr;
    for (const Roof& r : roofs) {
        if (r.kind != kind || !(r.value > 0))
            continue;
        if (r.origin == Roof::Origin::Measured)
            return &r;
        if (!first)
            first = &r;
    }
    return first;
}
} // namespace

const Roof* GpuRoofs::primaryMemory() const
{
    return primaryOf(roofs, Roof::Kind::Memory);
}

const Roof* GpuRoofs::primaryFp32() const
{
    return primaryOf(roofs, Roof::Kind::Fp32);
}

QList<Roof> GpuRoofs::roofsOf(Roof::Kind kind) const
{
    QList<Roof> out;
    const Roof* primary = primaryOf(roofs, kind);
    if (primary)
        out.append(*primary);
    for (const Roof& r : roofs) {
        if (r.kind == kind && &r != primary && r.value > 0)
            out.append(r);
    }
    return out;
}

double GpuRoofs::bandwidthGBps() const
{
    const Roof* r = primaryMemory();
    return r ? r->value : 0.0;
}

double GpuRoofs::fp32Gflops() const
{
    const Roof* r = primaryFp32();
    return r ? r->value : 0.0;
}

double GpuRoofs::ridgeIntensity(double computeGflops) const
{
    const double bw = bandwidthGBps();
    return bw > 0 ? computeGflops / bw : std::numeric_limits<double>::quiet_NaN();
}

double GpuRoofs::fp32RidgeIntensity() const
{
    return ridgeIntensity(fp32Gflops());
}

double GpuRoofs::attainableGflops(double intensity) const
{
    if (!isValid() || !(intensity > 0))
        return std::numeric_limits<double>::quiet_NaN();
    return std::min(bandwidthGBps() * intensity, fp32Gflops());
}

GpuTableLoad parseGpuTable(const QByteArray& json, const QString& origin)
{
    return TableParser(origin).parse(json);
}

GpuTableLoad loadGpuTable(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        GpuTableLoad out;
        out.error = QStringLiteral("%1: cannot read the GPU table: %2").arg(path, file.errorString());
        return out;
    }
    return parseGpuTable(file.readAll(), path);
}

QString userGpuTableDir()
{
    return QDir(QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation))
        .filePath(QStringLiteral("kernel-workbench/gpus"));
}

GpuTableLoad loadGpuTables(const QString& path, const QString& userDir)
{
    GpuTableLoad out = loadGpuTable(path);
    if (!out.ok() || userDir.isEmpty())
        return out;
    const QFileInfoList files =
        QDir(userDir).entryInfoList({QStringLiteral("*.json")}, QDir::Files | QDir::Readable, QDir::Name);
    for (const QFileInfo& file : files) {
        const GpuTableLoad user = loadGpuTable(file.filePath());
        QString error = user.error;
        for (const GpuRoofs& g : user.gpus)
            if (error.isEmpty() && findIn(out.gpus, g.key))
                error = QStringLiteral("%1: key \"%2\" is already in the GPU table (shipped, or a file before it)")
                            .arg(file.filePath(), g.key);
        if (!error.isEmpty())
            out.skipped << error;
        else
            out.gpus += user.gpus;
    }
    return out;
}

QString defaultGpuTablePath()
{
    const QString env = qEnvironmentVariable("KWB_GPU_TABLE");
    if (!env.isEmpty())
        return env;
    if (QCoreApplication::instance()) {
        const QString installed = QDir(QCoreApplication::applicationDirPath())
                                      .filePath(QStringLiteral("../share/kernel-workbench/gpus/datasheets.json"));
        if (QFileInfo(installed).isFile())
            return QDir::cleanPath(installed);
    }
    return QStringLiteral(KWB_SOURCE_DATA_DIR "/gpus/datasheets.json");
}

const QList<GpuRoofs>& gpuTable()
{
    return loadedTable().load.gpus;
}

QString gpuTableError()
{
    return loadedTable().load.error;
}

QStringList gpuTableSkipped()
{
    return loadedTable().load.skipped;
}

const GpuRoofs* findGpu(const QString& key)
{
    return findIn(gpuTable(), key);
}

const GpuRoofs* findGpuForDevice(const QString& deviceName)
{
    if (deviceName.isEmpty())
        return nullptr;
    for (const GpuRoofs& g : gpuTable()) {
        for (const QString& pattern : g.deviceNames)
            if (QRegularExpression(pattern, QRegularExpression::CaseInsensitiveOption).match(deviceName).hasMatch())
                return &g;
    }
    return nullptr;
}

GpuRoofs fromDeviceResponse(const QJsonObject& response)
{
    return fromDeviceFacts(decodeDeviceFacts(response));
}

GpuRoofs fromDeviceFacts(const DeviceFacts& device)
{
    using K = Roof::Kind;
    using O = Roof::Origin;
    GpuRoofs g;
    g.key = QStringLiteral("current");
    if (!device.available) {
        g.name = QStringLiteral("no GPU");
        g.citation = device.reason.isEmpty() ? QStringLiteral("the worker reports no GPU")
                                             : QStringLiteral("the worker reports no GPU: %1").arg(device.reason);
        return g;
    }
    g.name = device.name.isEmpty() ? QStringLiteral("unnamed GPU") : device.name;
    g.smCount = device.smCount;
    g.l2Bytes = device.l2Bytes;

    // Measured first: they are the primary roofs where present.
    const auto measured = [&](K kind, const MeasuredCeiling& c, const QString& label) {
        if (c.present())
            g.roofs.append(roof(kind, O::Measured, c.value, label, c.method));
    };
    measured(K::Memory, device.hbmCopy, QStringLiteral("HBM copy"));
    measured(K::Fp32, device.fp32Fma, QStringLiteral("FP32 FMA"));
    measured(K::Tf32Tensor, device.tensorTf32, QStringLiteral("TF32 tensor"));
    measured(K::Bf16Tensor, device.tensorBf16, QStringLiteral("BF16 tensor"));

    // Theoretical, shown beside the measured ones.
    const double hbm = device.hbmTheoreticalGBps;
    if (hbm > 0)
        g.roofs.append(roof(K::Memory, O::Theoretical, hbm, QStringLiteral("HBM"),
                            QStringLiteral("2 transfers per memory clock × bus width")));
    const int lanes = fp32FmaLanesPerSm(device.cc);
    if (const double fp32 = device.theoreticalFp32Gflops(); fp32 > 0) {
        g.roofs.append(roof(K::Fp32, O::Theoretical, fp32, QStringLiteral("FP32"),
                            QStringLiteral("%1 SMs × %2 lanes × 2 FLOP × %3 GHz")
                                .arg(g.smCount)
                                .arg(lanes)
                                .arg(QString::number(device.smClockKhz * 1e-6, 'f', 3))));
    }

    QStringList from;
    if (device.hasCeilings)
        from << QStringLiteral("measured by the worker on this machine");
    if (hbm > 0 || lanes > 0)
        from << QStringLiteral("theoretical from the device's clocks");
    g.citation = from.isEmpty() ? QStringLiteral("the worker's device response") : from.join(QStringLiteral("; "));
    return g;
}

} // namespace kwb
