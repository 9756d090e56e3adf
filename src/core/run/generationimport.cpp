#include "core/run/generationimport.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSet>

#include <algorithm>
#include <optional>

namespace kwb {

namespace {

// The parts a name can carry, in the order KernelBench and its forks write them, each optional:
// level_1_problem_3_sample_0, level_1_problem_1_epoch_0_sample_1, level1, problem_3, sample0,
// solution_2. Separators `_` or `-`, any case.
const QString kParts = QStringLiteral("(?:level[_-]?(?<level>\\d+))?[_-]?"
                                      "(?:problem[_-]?(?<problem>\\d+))?[_-]?"
                                      "(?:epoch[_-]?(?<epoch>\\d+))?[_-]?"
                                      "(?:(?:sample|solution)[_-]?(?<sample>\\d+))?");

// A file's stem: the parts, then what the file is (kernel, response, prompt), or nothing.
const QRegularExpression& stemPattern()
{
    static const QRegularExpression pattern(QStringLiteral("^") + kParts +
                                                QStringLiteral("[_-]?(?<role>kernel|response|prompt)?$"),
                                            QRegularExpression::CaseInsensitiveOption);
    return pattern;
}

// A folder that belongs to its files (level1, problem_3, level_1_problem_3): the parts only.
const QRegularExpression& folderPattern()
{
    static const QRegularExpression pattern(QStringLiteral("^") + kParts + QStringLiteral("$"),
                                            QRegularExpression::CaseInsensitiveOption);
    return pattern;
}

struct Parts
{
    int level = -1, problem = -1, sample = -1, epoch = -1;
    QString role; ///< lower case, empty: none
    bool any() const { return level >= 0 || problem >= 0 || sample >= 0 || epoch >= 0; }
};

int capturedInt(const QRegularExpressionMatch& m, const QString& name)
{
    const QString text = m.captured(name);
    bool ok = false;
    const int value = text.toInt(&ok);
    return ok ? value : -1;
}

std::optional<Parts> matchParts(const QRegularExpression& pattern, const QString& text)
{
    if (text.isEmpty())
        return std::nullopt;
    const QRegularExpressionMatch m = pattern.match(text);
    if (!m.hasMatch())
        return std::nullopt;
    Parts parts;
    parts.level = capturedInt(m, QStringLiteral("level"));
    parts.problem = capturedInt(m, QStringLiteral("problem"));
    parts.sample = capturedInt(m, QStringLiteral("sample"));
    parts.epoch = capturedInt(m, QStringLiteral("epoch"));
    if (pattern.namedCaptureGroups().contains(QStringLiteral("role")))
        parts.role = m.captured(QStringLiteral("role")).toLower();
    if (!parts.any() && parts.role.isEmpty())
        return std::nullopt;
    return parts;
}

void fill(int& into, int from)
{
    if (into < 0)
        into = from;
}

QString taskId(int level, int problem)
{
    return QStringLiteral("L%1/%2").arg(level).arg(problem);
}

// eval_results.json (KernelBench, Kernel-Coder), results.json, detailed_results.json (a fork's, with its
// run's level in run_info).
bool isVerdictFileName(const QString& fileName)
{
    static const QRegularExpression pattern(QStringLiteral("^(eval(uation)?_|detailed_)?results?.*\\.json$"),
                                            QRegularExpression::CaseInsensitiveOption);
    return pattern.match(fileName).hasMatch();
}

// The level a run folder's name gives among other words (opus4_level2_20250903_065424,
// qwencoder_level1_run), -1 where it names none or two different ones.
int levelInName(const QString& name)
{
    static const QRegularExpression pattern(QStringLiteral("(?:^|[^a-z0-9])level[_-]?(\\d+)(?![0-9])"),
                                            QRegularExpression::CaseInsensitiveOption);
    int level = -1;
    for (auto it = pattern.globalMatch(name); it.hasNext();) {
        const int found = it.next().captured(1).toInt();
        if (level >= 0 && found != level)
            return -1;
        level = found;
    }
    return level;
}

QString parentOf(const QString& relativePath)
{
    const qsizetype slash = relativePath.lastIndexOf(QLatin1Char('/'));
    return slash < 0 ? QString() : relativePath.left(slash);
}

// The level a run's config names (`level: 1` in KernelBench's generation_config.yaml, Kernel-Coder's
// config.yaml), -1 when none says one.
int configLevel(const QDir& folder)
{
    static const QRegularExpression pattern(QStringLiteral("^level:\\s*(\\d+)\\s*$"),
                                            QRegularExpression::MultilineOption);
    for (const QString& name : {QStringLiteral("generation_config.yaml"), QStringLiteral("eval_config.yaml"),
                                QStringLiteral("config.yaml")}) {
        QFile file(folder.filePath(name));
        if (!file.open(QIODevice::ReadOnly))
            continue;
        const QRegularExpressionMatch m = pattern.match(QString::fromUtf8(file.read(1 << 20)));
        if (m.hasMatch())
            return m.captured(1).toInt();
    }
    return -1;
}

// --- recorded verdicts -----------------------------------------------------------------------

std::optional<double> positive(const QJsonValue& value)
{
    if (!value.isDouble())
        return std::nullopt;
    const double v = value.toDouble();
    return v > 0 ? std::optional<double>(v) : std::nullopt;
}

QJsonValue jsonNumber(std::optional<double> value)
{
    return value ? QJsonValue(*value) : QJsonValue();
}

QJsonValue firstString(std::initializer_list<QJsonValue> values)
{
    for (const QJsonValue& v : values)
        if (v.isString() && !v.toString().isEmpty())
            return v;
    return QJsonValue();
}

QString textOf(const QJsonValue& value)
{
    if (value.isString())
        return value.toString();
    if (value.isArray())
        return QString::fromUtf8(QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact));
    if (value.isObject())
        return QString::fromUtf8(QJsonDocument(value.toObject()).toJson(QJsonDocument::Compact));
    if (value.isBool())
        return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    if (value.isDouble())
        return QString::number(value.toDouble());
    return QString();
}

// An id such as "level_1_problem_13_solution_0" or "level_1_problem_1_epoch_0_sample_1".
Parts idParts(const QJsonValue& value)
{
    if (value.isDouble()) {
        Parts parts;
        parts.sample = value.toInt(-1);
        return parts;
    }
    if (value.isString())
        if (const std::optional<Parts> parts = matchParts(stemPattern(), value.toString()))
            return *parts;
    return {};
}

int intField(const QJsonObject& entry, std::initializer_list<const char*> names)
{
    for (const char* name : names) {
        const QJsonValue v = entry.value(QLatin1String(name));
        if (v.isDouble())
            return v.toInt(-1);
        if (v.isString()) {
            bool ok = false;
            const int n = v.toString().toInt(&ok);
            if (ok)
                return n;
        }
    }
    return -1;
}

bool looksLikeEntry(const QJsonObject& object)
{
    return object.contains(QLatin1String("compiled")) || object.contains(QLatin1String("correctness")) ||
           object.contains(QLatin1String("correct"));
}

// An entry whose verdict is one level down ({"problem_id": 3, "eval_result": {"compiled", …}}, a
// fork's detailed_results.json): the verdict, with the entry's other fields (where it belongs)
// beside it.
QJsonObject unwrapEntry(const QJsonObject& entry)
{
    if (looksLikeEntry(entry))
        return entry;
    for (const char* name : {"eval_result", "evaluation", "result"}) {
        const QJsonObject inner = entry.value(QLatin1String(name)).toObject();
        if (inner.isEmpty() || !looksLikeEntry(inner))
            continue;
        QJsonObject merged = inner;
        for (auto it = entry.constBegin(); it != entry.constEnd(); ++it)
            if (it.key() != QLatin1String(name) && !merged.contains(it.key()))
                merged.insert(it.key(), it.value());
        return merged;
    }
    return entry;
}

// The level a verdict file names for all its entries ({"run_info": {"level": 2}, "results": […]}).
int fileLevel(const QJsonObject& root)
{
    for (const QJsonObject& o :
         {root, root.value(QLatin1String("run_info")).toObject(), root.value(QLatin1String("config")).toObject()}) {
        const int level = intField(o, {"level"});
        if (level >= 0)
            return level;
    }
    return -1;
}

// Where one entry belongs: its own fields first, then what its keys in the file said.
Parts placeOf(const QJsonObject& entry, const Parts& fromKeys, int defaultLevel)
{
    Parts parts;
    parts.level = intField(entry, {"level", "level_id"});
    parts.problem = intField(entry, {"problem_id", "problem"});
    parts.sample = intField(entry, {"sample_id", "sample", "solution"});
    for (const char* id : {"evaluation_id", "solution_id", "sample_id", "task_id", "id"}) {
        const QJsonValue v = entry.value(QLatin1String(id));
        if (!v.isString())
            continue;
        const Parts p = idParts(v);
        fill(parts.level, p.level);
        fill(parts.problem, p.problem);
        fill(parts.sample, p.sample);
        fill(parts.epoch, p.epoch);
    }
    fill(parts.level, fromKeys.level);
    fill(parts.problem, fromKeys.problem);
    fill(parts.sample, fromKeys.sample);
    fill(parts.level, defaultLevel);
    return parts;
}

// A key of the file: "3" (a problem, KernelBench's), "0" under a problem (a sample), or an id.
Parts keyParts(const QString& key, bool isSampleKey)
{
    Parts parts;
    bool ok = false;
    const int n = key.toInt(&ok);
    if (ok) {
        (isSampleKey ? parts.sample : parts.problem) = n;
        return parts;
    }
    return idParts(QJsonValue(key));
}

} // namespace

GenerationPath parseGenerationPath(const QString& relativePath)
{
    GenerationPath path;
    const QStringList components = relativePath.split(QLatin1Char('/'), Qt::SkipEmptyParts);
    if (components.isEmpty())
        return path;
    const QString fileName = components.constLast();
    const qsizetype dot = fileName.lastIndexOf(QLatin1Char('.'));
    const QString extension = dot < 0 ? QString() : fileName.mid(dot + 1).toLower();
    const QString stem = dot < 0 ? fileName : fileName.left(dot);

    Parts parts;
    if (extension == QLatin1String("py") || extension == QLatin1String("txt")) {
        if (const std::optional<Parts> fromName = matchParts(stemPattern(), stem)) {
            parts = *fromName;
            if (parts.role == QLatin1String("kernel"))
                path.role = GenerationPath::Role::Kernel;
            else if (parts.role == QLatin1String("response"))
                path.role = GenerationPath::Role::Response;
            else if (parts.role == QLatin1String("prompt"))
                path.role = GenerationPath::Role::Prompt;
            else
                path.role =
                    extension == QLatin1String("py") ? GenerationPath::Role::Kernel : GenerationPath::Role::Response;
        }
    }
    // The folders, innermost first: those made of parts only belong to the file.
    int folder = int(components.size()) - 2;
    for (; folder >= 0; --folder) {
        const std::optional<Parts> fromFolder = matchParts(folderPattern(), components.at(folder));
        if (!fromFolder)
            break;
        fill(parts.level, fromFolder->level);
        fill(parts.problem, fromFolder->problem);
        fill(parts.sample, fromFolder->sample);
        fill(parts.epoch, fromFolder->epoch);
    }
    path.runFolder = components.mid(0, folder + 1).join(QLatin1Char('/'));
    // Forks that name files problem_P_kernel.py keep the level in the run folder's name: the
    // innermost folder that names one, where the file and its own folders do not.
    for (int i = folder; i >= 0 && parts.level < 0; --i)
        parts.level = levelInName(components.at(i));
    path.level = parts.level;
    path.problem = parts.problem;
    path.sample = parts.sample;
    path.epoch = parts.epoch;
    return path;
}

QString runFolderOf(const QString& relativeFolder)
{
    QStringList components = relativeFolder.split(QLatin1Char('/'), Qt::SkipEmptyParts);
    while (!components.isEmpty() && matchParts(folderPattern(), components.constLast()))
        components.removeLast();
    return components.join(QLatin1Char('/'));
}

QStringList GenerationScan::runFolders() const
{
    QStringList folders;
    for (const FoundGeneration& g : generations)
        if (!folders.contains(g.runFolder))
            folders << g.runFolder;
    return folders;
}

QMap<QString, int> GenerationScan::skippedByKind() const
{
    QMap<QString, int> counts;
    for (const SkippedFile& s : skipped)
        ++counts[s.kind];
    return counts;
}

QJsonObject normalizeRecordedVerdict(const QJsonObject& entry, const QString& source)
{
    const QJsonObject metadata = entry.value(QLatin1String("metadata")).toObject();
    const QJsonObject runtimeStats = entry.value(QLatin1String("runtime_stats")).toObject();
    const QJsonObject refStats = entry.value(QLatin1String("ref_runtime_stats")).toObject();
    // KernelBench times with CUDA events: milliseconds (its KernelExecResult's comment says µs;
    // src/kernelbench/timing.py records elapsed_time, which is ms).
    std::optional<double> runtime = positive(entry.value(QLatin1String("runtime")));
    if (!runtime)
        runtime = positive(runtimeStats.value(QLatin1String("mean")));
    std::optional<double> refRuntime = positive(entry.value(QLatin1String("ref_runtime")));
    if (!refRuntime)
        refRuntime = positive(refStats.value(QLatin1String("mean")));
    std::optional<double> speedup = positive(entry.value(QLatin1String("speedup")));
    if (!speedup && runtime && refRuntime)
        speedup = *refRuntime / *runtime;
    const QJsonValue correct = entry.contains(QLatin1String("correctness")) ? entry.value(QLatin1String("correctness"))
                                                                            : entry.value(QLatin1String("correct"));
    QJsonValue error;
    for (const char* name : {"compilation_error", "runtime_error", "cuda_error", "other_error", "correctness_issue"}) {
        const QJsonValue v = metadata.value(QLatin1String(name));
        if (!v.isUndefined() && !v.isNull()) {
            error = textOf(v).left(2000);
            break;
        }
    }
    return QJsonObject{
        {QStringLiteral("source"), source},
        {QStringLiteral("compiled"),
         entry.value(QLatin1String("compiled")).isBool() ? entry.value(QLatin1String("compiled")) : QJsonValue()},
        {QStringLiteral("correct"), correct.isBool() ? correct : QJsonValue()},
        {QStringLiteral("runtime_ms"), jsonNumber(runtime)},
        {QStringLiteral("ref_runtime_ms"), jsonNumber(refRuntime)},
        {QStringLiteral("speedup"), jsonNumber(speedup)},
        {QStringLiteral("hardware"),
         firstString({metadata.value(QLatin1String("hardware")), runtimeStats.value(QLatin1String("hardware")),
                      entry.value(QLatin1String("hardware")), metadata.value(QLatin1String("device_name")),
                      entry.value(QLatin1String("device_name")), entry.value(QLatin1String("gpu"))})},
        {QStringLiteral("device"),
         firstString({metadata.value(QLatin1String("device")), runtimeStats.value(QLatin1String("device")),
                      entry.value(QLatin1String("device"))})},
        {QStringLiteral("error"), error},
        {QStringLiteral("correctness_trials"), firstString({metadata.value(QLatin1String("correctness_trials"))})},
        {QStringLiteral("recorded"), entry},
    };
}

bool parseRecordedVerdicts(const QByteArray& text, int defaultLevel, const QString& source,
                           QList<RecordedVerdict>* verdicts, int* unplaced, QString* error)
{
    QJsonParseError parseError;
    const QJsonDocument document = QJsonDocument::fromJson(text, &parseError);
    if (document.isNull()) {
        if (error)
            *error = QStringLiteral("not JSON: %1").arg(parseError.errorString());
        return false;
    }
    int left = 0, found = 0;
    const auto add = [&](const QJsonObject& entry, const Parts& fromKeys, int level) {
        const Parts at = placeOf(entry, fromKeys, level);
        if (at.level < 0 || at.problem < 0 || at.sample < 0) {
            ++left;
            return;
        }
        ++found;
        RecordedVerdict v;
        v.task = taskId(at.level, at.problem);
        v.sample = at.sample;
        v.source = source;
        v.verdict = normalizeRecordedVerdict(entry, source);
        v.hardware = v.verdict.value(QLatin1String("hardware")).toString();
        verdicts->append(v);
    };
    // A list of entries: an entry that names its problem but no sample is the problem's one sample
    // when no other entry of the list is of that problem.
    const auto addList = [&](const QJsonArray& list, const Parts& fromKeys, int level) {
        QHash<QPair<int, int>, int> unnumbered;   // (level, problem) -> entries without a sample
        QList<QPair<QJsonObject, Parts>> entries; // each with where it says it belongs
        for (const QJsonValue& e : list) {
            if (!e.isObject()) {
                ++left;
                continue;
            }
            const QJsonObject entry = unwrapEntry(e.toObject());
            entries.append({entry, placeOf(entry, fromKeys, level)});
            if (entries.constLast().second.sample < 0)
                ++unnumbered[{entries.constLast().second.level, entries.constLast().second.problem}];
        }
        for (const auto& [entry, at] : std::as_const(entries)) {
            Parts keys = fromKeys;
            if (at.sample < 0 && at.problem >= 0 && unnumbered.value({at.level, at.problem}) == 1)
                keys.sample = 0;
            add(entry, keys, level);
        }
    };
    const QJsonObject root = document.object();
    const QJsonValue results = root.value(QLatin1String("results"));
    if (document.isArray()) {
        // Kernel-Coder: [{"evaluation_id": "level_1_problem_13_solution_0", …}, …]
        addList(document.array(), Parts{}, defaultLevel);
    } else if (results.isArray() && !looksLikeEntry(root)) {
        // A fork's detailed_results.json: {"run_info": {"level": 2, …}, "results": [{"problem_id": 1,
        // "eval_result": {"compiled", "correctness", …}}, …]}.
        const int level = fileLevel(root);
        addList(results.toArray(), Parts{}, level >= 0 ? level : defaultLevel);
    } else {
        // KernelBench: {"<problem>": [{"sample_id": S, …}, …]}; its older files
        // {"<problem>": {"sample_id": S, …}}; {"<problem>": {"<sample>": {…}}}.
        for (auto it = root.constBegin(); it != root.constEnd(); ++it) {
            const Parts key = keyParts(it.key(), false);
            if (it.value().isArray()) {
                addList(it.value().toArray(), key, defaultLevel);
            } else if (it.value().isObject()) {
                const QJsonObject value = unwrapEntry(it.value().toObject());
                if (looksLikeEntry(value)) {
                    Parts withSample = key;
                    fill(withSample.sample, 0); // one sample per problem, unless the entry says which
                    Parts own = placeOf(value, Parts{}, -1);
                    if (own.sample >= 0)
                        withSample.sample = own.sample;
                    add(value, withSample, defaultLevel);
                    continue;
                }
                for (auto s = value.constBegin(); s != value.constEnd(); ++s) {
                    if (!s.value().isObject()) {
                        ++left;
                        continue;
                    }
                    Parts sampleKey = keyParts(s.key(), true);
                    fill(sampleKey.level, key.level);
                    fill(sampleKey.problem, key.problem);
                    add(unwrapEntry(s.value().toObject()), sampleKey, defaultLevel);
                }
            } else {
                ++left;
            }
        }
    }
    if (unplaced)
        *unplaced = left;
    if (found == 0) {
        if (error)
            *error = left > 0 ? QStringLiteral("none of its %1 entries says its level, problem and sample%2")
                                    .arg(left)
                                    .arg(defaultLevel < 0 ? QStringLiteral(" (no level: no generation or config.yaml "
                                                                           "beside it names one)")
                                                          : QString())
                              : QStringLiteral("no verdict in it");
        return false;
    }
    return true;
}

GenerationScan scanKernelBenchFolder(const QString& directory, const std::function<bool(const QString&)>& hasTask)
{
    GenerationScan scan;
    const QDir root(QDir(directory).absolutePath());
    QStringList files;
    QDirIterator it(root.path(), QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString relative = root.relativeFilePath(it.next());
        // Hidden files and folders (.git, .ipynb_checkpoints) are not looked at.
        bool hidden = false;
        for (const QString& part : relative.split(QLatin1Char('/')))
            hidden = hidden || part.startsWith(QLatin1Char('.'));
        if (!hidden)
            files << relative;
    }
    std::sort(files.begin(), files.end());
    scan.filesFound = int(files.size());

    struct Candidate
    {
        FoundGeneration generation;
        int rank = 0; // 0 a module, 1 a whole response, 2 an empty module: the lowest wins
    };
    const auto isEmptyFile = [&](const QString& file) {
        QFile f(root.filePath(file));
        if (f.size() > (1 << 16) || !f.open(QIODevice::ReadOnly))
            return false;
        return f.readAll().trimmed().isEmpty();
    };
    QList<Candidate> candidates;
    QStringList verdictPaths;
    QHash<QString, QMap<int, int>> levelsOfFolder; // run folder -> level -> files naming it
    QHash<QString, int> configLevels;              // folder -> the level its config names, -1: none
    const auto configLevelOf = [&](const QString& folder) {
        auto known = configLevels.constFind(folder);
        if (known == configLevels.constEnd())
            known = configLevels.insert(
                folder, configLevel(QDir(root.filePath(folder.isEmpty() ? QStringLiteral(".") : folder))));
        return *known;
    };
    for (const QString& file : std::as_const(files)) {
        const QString fileName = file.section(QLatin1Char('/'), -1);
        if (isVerdictFileName(fileName)) {
            verdictPaths << file;
            continue;
        }
        GenerationPath path = parseGenerationPath(file);
        if (path.level >= 0)
            ++levelsOfFolder[path.runFolder][path.level];
        if (path.role == GenerationPath::Role::Other) {
            scan.skipped.append({file, SkipKind::NotAGeneration,
                                 QStringLiteral("not a generation (a .py or .txt named by level, problem and sample or "
                                                "solution, as KernelBench's level_L_problem_P_sample_S_kernel.py)")});
            continue;
        }
        if (path.role == GenerationPath::Role::Prompt) {
            scan.skipped.append({file, SkipKind::Prompt, QStringLiteral("a prompt, not a generation")});
            continue;
        }
        if (path.problem >= 0 && path.level < 0)
            path.level = configLevelOf(parentOf(file)); // KernelBench's generation_config.yaml `level`
        // A file that names its problem but no sample is the problem's one sample (forks that generate
        // once per problem write problem_3_kernel.py; their verdict files say the same); a second such
        // file of the problem in the run folder is then a duplicate, skipped with its reason.
        if (path.problem >= 0 && path.sample < 0)
            path.sample = 0;
        QStringList missing;
        if (path.level < 0)
            missing << QStringLiteral("level");
        if (path.problem < 0)
            missing << QStringLiteral("problem");
        if (path.sample < 0)
            missing << QStringLiteral("sample (or solution)");
        if (!missing.isEmpty()) {
            scan.skipped.append(
                {file, SkipKind::Unnamed,
                 QStringLiteral("no %1 number in its name or folders").arg(missing.join(QStringLiteral(", ")))});
            continue;
        }
        const QString task = taskId(path.level, path.problem);
        if (path.level < 1 || path.level > 3) {
            scan.skipped.append(
                {file, SkipKind::Level,
                 QStringLiteral("level %1: only KernelBench's levels 1-3 are imported").arg(path.level)});
            continue;
        }
        if (path.problem < 1) {
            scan.skipped.append(
                {file, SkipKind::Level, QStringLiteral("problem 0: KernelBench numbers problems from 1")});
            continue;
        }
        if (!hasTask(task)) {
            scan.skipped.append(
                {file, SkipKind::WorkerHasNoTask, QStringLiteral("the worker has no task %1").arg(task)});
            continue;
        }
        Candidate c;
        c.generation.file = file;
        c.generation.runFolder = path.runFolder;
        c.generation.task = task;
        c.generation.level = path.level;
        c.generation.problem = path.problem;
        c.generation.sample = path.sample;
        c.generation.epoch = path.epoch;
        c.generation.wholeResponse = path.role == GenerationPath::Role::Response;
        c.rank = c.generation.wholeResponse ? 1 : isEmptyFile(file) ? 2 : 0;
        candidates.append(c);
    }

    // One file per sample of a task in a run folder: a module before a whole response (Kernel-Coder
    // keeps both: the module is what its evaluation ran), but a response before an empty module
    // (its script extracted nothing: Kernel-Coder writes the file anyway), then path order.
    const auto key = [](const FoundGeneration& g) {
        return std::make_tuple(g.runFolder, g.level, g.problem, g.sample);
    };
    std::stable_sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
        return std::make_tuple(key(a.generation), a.rank, a.generation.file) <
               std::make_tuple(key(b.generation), b.rank, b.generation.file);
    });
    QList<SkippedFile> duplicates;
    for (qsizetype i = 0; i < candidates.size(); ++i) {
        const FoundGeneration& g = candidates.at(i).generation;
        if (i > 0 && key(candidates.at(i - 1).generation) == key(g)) {
            // The first of this key is the last one kept.
            const FoundGeneration& kept = scan.generations.constLast();
            if (candidates.at(i).rank == 2 && kept.wholeResponse)
                duplicates.append(
                    {g.file, SkipKind::EmptyModule,
                     QStringLiteral("an empty module (nothing was extracted into it): the whole response %1 "
                                    "is imported as sample %2 of %3")
                         .arg(kept.file)
                         .arg(g.sample)
                         .arg(g.task)});
            else if (g.wholeResponse && !kept.wholeResponse)
                duplicates.append({g.file, SkipKind::ResponseOfKernel,
                                   QStringLiteral("the whole response of sample %1 of %2, whose module %3 is imported")
                                       .arg(g.sample)
                                       .arg(g.task, kept.file)});
            else
                duplicates.append({g.file, SkipKind::Duplicate,
                                   QStringLiteral("another file (%1) is already sample %2 of %3")
                                       .arg(kept.file)
                                       .arg(g.sample)
                                       .arg(g.task)});
            continue;
        }
        scan.generations.append(g);
    }

    // The recorded verdicts, each file for the generations of its run folder.
    for (const QString& file : std::as_const(verdictPaths)) {
        const QString folder = parentOf(file);
        VerdictFile vf;
        vf.file = file;
        vf.runFolder = runFolderOf(folder);
        // The level its entries are of when they do not say: its folders', the one most of its run's
        // files name (KernelBench evaluates a run of one level), or its run's config.
        int level = parseGenerationPath(file).level;
        if (level < 0) {
            const QMap<int, int> levels = levelsOfFolder.value(vf.runFolder);
            int most = 0;
            bool tie = false;
            for (auto l = levels.cbegin(); l != levels.cend(); ++l) {
                if (l.value() > most) {
                    most = l.value();
                    level = l.key();
                    tie = false;
                } else if (l.value() == most) {
                    tie = true;
                }
            }
            if (tie)
                level = -1;
        }
        if (level < 0)
            level = configLevelOf(folder);
        QFile f(root.filePath(file));
        if (!f.open(QIODevice::ReadOnly)) {
            scan.skipped.append({file, SkipKind::Unreadable, QStringLiteral("unreadable: %1").arg(f.errorString())});
            continue;
        }
        QList<RecordedVerdict> verdicts;
        QString error;
        if (!parseRecordedVerdicts(f.readAll(), level, file, &verdicts, &vf.unplaced, &error)) {
            scan.skipped.append(
                {file, SkipKind::Verdicts, QStringLiteral("recorded verdicts not read: %1").arg(error)});
            continue;
        }
        QMap<QString, int> hardwareCounts;
        for (RecordedVerdict& v : verdicts) {
            v.runFolder = vf.runFolder;
            if (!v.hardware.isEmpty())
                ++hardwareCounts[v.hardware];
        }
        QList<QPair<int, QString>> byCount;
        for (auto h = hardwareCounts.cbegin(); h != hardwareCounts.cend(); ++h)
            byCount.append({-h.value(), h.key()});
        std::sort(byCount.begin(), byCount.end());
        for (const auto& h : std::as_const(byCount))
            vf.hardware << h.second;
        vf.entries = int(verdicts.size());
        scan.verdictFiles.append(vf);
        scan.verdicts.append(verdicts);
    }

    scan.skipped.append(duplicates);
    std::stable_sort(scan.skipped.begin(), scan.skipped.end(),
                     [](const SkippedFile& a, const SkippedFile& b) { return a.file < b.file; });
    return scan;
}

} // namespace kwb
