// The records a run store holds, written and read back (runstore.cpp opens the file and keeps its
// schema).

#include "core/store/runstore.h"

#include "core/model/secrets.h"
#include "core/protocol/evaluationresult.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

namespace kwb {

namespace {

QString nowText()
{
    return QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs);
}

QDateTime parseTime(const QString& text)
{
    // Stored with a trailing Z, so this reads back as UTC.
    return QDateTime::fromString(text, Qt::ISODateWithMs);
}

QString jsonText(const QJsonObject& object)
{
    return QString::fromUtf8(QJsonDocument(object).toJson(QJsonDocument::Compact));
}

QJsonObject jsonObject(const QString& text)
{
    return QJsonDocument::fromJson(text.toUtf8()).object();
}

// A reused verdict (`reused_from_candidate`: RunController's identical answers) is a copy of its
// origin's result. The bulky parts of the copy, each kernel's SASS and PTX and the candidate echo,
// are stored once: in session 28 they were 49 of a 12-run study's 148 MB. The reused row names the
// row that holds them, and every read puts them back (completeRecord), so no reader sees the
// difference.
constexpr const char* kSharedPartsKey = "shared_parts_of_evaluation";

struct SharedPart
{
    const char* parent; // nullptr: a key of the result itself
    const char* key;
    const char* name; // as the reference lists it
};

constexpr SharedPart kSharedParts[] = {{"compile", "kernel_facts", "compile.kernel_facts"},
                                       {nullptr, "candidate", "candidate"}};

QJsonValue partOf(const QJsonObject& result, const SharedPart& part)
{
    const QJsonObject holder = part.parent ? result.value(QLatin1String(part.parent)).toObject() : result;
    return holder.value(QLatin1String(part.key));
}

/// Sets a part, or removes it where `value` is undefined.
void setPart(QJsonObject* result, const SharedPart& part, const QJsonValue& value)
{
    QJsonObject holder = part.parent ? result->value(QLatin1String(part.parent)).toObject() : *result;
    if (value.isUndefined())
        holder.remove(QLatin1String(part.key));
    else
        holder.insert(QLatin1String(part.key), value);
    if (part.parent)
        result->insert(QLatin1String(part.parent), holder);
    else
        *result = holder;
}

/// `stored` (scrubbed) without the parts it shares with the evaluation of the candidate it was
/// reused from, and a reference to that row; unchanged where it is no reuse or nothing is the same.
QJsonObject shareWithOrigin(const QSqlDatabase& db, QJsonObject stored)
{
    // The reference is the store's alone: one that came with the result (an answer's library can
    // write its own response) would lend it another candidate's code.
    stored.remove(QLatin1String(kSharedPartsKey));
    const qint64 from = stored.value(QLatin1String(kReusedFromCandidateKey)).toInteger(0);
    if (from <= 0)
        return stored;
    // The row that holds its parts itself: the origin's latest evaluation that is no copy.
    QSqlQuery query(db);
    query.prepare(QStringLiteral("SELECT id, result FROM evaluations WHERE candidate_id = ? AND json_valid(result)"
                                 " AND json_type(result, '$.reused_from_candidate') IS NULL"
                                 " AND json_type(result, '$.shared_parts_of_evaluation') IS NULL"
                                 " ORDER BY id DESC LIMIT 1"));
    query.addBindValue(from);
    if (!query.exec() || !query.next())
        return stored;
    const qint64 originId = query.value(0).toLongLong();
    const QJsonObject origin = jsonObject(query.value(1).toString());
    QJsonArray shared;
    for (const SharedPart& part : kSharedParts) {
        const QJsonValue value = partOf(stored, part);
        if (value.isUndefined() || value != partOf(origin, part))
            continue;
        setPart(&stored, part, QJsonValue(QJsonValue::Undefined));
        shared.append(QLatin1String(part.name));
    }
    if (!shared.isEmpty())
        stored.insert(QLatin1String(kSharedPartsKey),
                      QJsonObject{{QStringLiteral("evaluation"), double(originId)}, {QStringLiteral("parts"), shared}});
    return stored;
}

/// A null QString binds as SQL NULL; the text columns are NOT NULL and take '' instead.
QString text(const QString& value)
{
    return value.isNull() ? QStringLiteral("") : value;
}

QVariant optionalValue(const std::optional<qint64>& value)
{
    return value ? QVariant(*value) : QVariant(QMetaType::fromType<qint64>());
}

QVariant optionalValue(const std::optional<double>& value)
{
    return value ? QVariant(*value) : QVariant(QMetaType::fromType<double>());
}

QString blocksFromText(CandidateBlocksFrom from)
{
    switch (from) {
    case CandidateBlocksFrom::Worker: return QStringLiteral("worker");
    case CandidateBlocksFrom::Client: return QStringLiteral("client");
    case CandidateBlocksFrom::None: break;
    }
    return QStringLiteral("none");
}

CandidateBlocksFrom blocksFromValue(const QString& text)
{
    if (text == QLatin1String("worker"))
        return CandidateBlocksFrom::Worker;
    if (text == QLatin1String("client"))
        return CandidateBlocksFrom::Client;
    return CandidateBlocksFrom::None;
}

QVariant lineValue(int line)
{
    return line > 0 ? QVariant(line) : QVariant(QMetaType::fromType<int>());
}

QVariant kernelsValue(CandidateBlocksFrom from, const QStringList& kernels)
{
    if (from == CandidateBlocksFrom::None)
        return QVariant(QMetaType::fromType<QString>());
    return QString::fromUtf8(QJsonDocument(QJsonArray::fromStringList(kernels)).toJson(QJsonDocument::Compact));
}

std::optional<double> optionalDouble(const QVariant& value)
{
    if (value.isNull())
        return std::nullopt;
    return value.toDouble();
}

std::optional<qint64> optionalInt(const QVariant& value)
{
    if (value.isNull())
        return std::nullopt;
    return value.toLongLong();
}

} // namespace

void RunInfo::setConfig(const QJsonObject& json)
{
    configJson = json;
    config = RunConfig::fromJson(json);
    gpu = config.gpu;
}

size_t qHash(const UnitKey& key, size_t seed) noexcept
{
    return qHashMulti(seed, key.task, key.turn, key.sample, key.role);
}

// ---------------------------------------------------------------------------------------------

std::optional<qint64> RunStore::createRun(const QString& name, const QString& regime, const QJsonObject& config)
{
    if (!isOpen()) {
        fail(QStringLiteral("run store not open"));
        return std::nullopt;
    }
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.prepare(QStringLiteral("INSERT INTO runs (name, created, regime, config, status) VALUES (?, ?, ?, ?, ?)"));
    query.addBindValue(text(name));
    query.addBindValue(nowText());
    query.addBindValue(text(regime));
    query.addBindValue(jsonText(config));
    query.addBindValue(RunStatus::Running);
    if (!execOrFail(query, QStringLiteral("create run")))
        return std::nullopt;
    return query.lastInsertId().toLongLong();
}

bool RunStore::setRunStatus(qint64 runId, const QString& status)
{
    if (!isOpen())
        return fail(QStringLiteral("run store not open"));
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.prepare(QStringLiteral("UPDATE runs SET status = ? WHERE id = ?"));
    query.addBindValue(status);
    query.addBindValue(runId);
    if (!execOrFail(query, QStringLiteral("set run status")))
        return false;
    if (query.numRowsAffected() != 1)
        return fail(QStringLiteral("set run status: no run %1").arg(runId));
    return true;
}

std::optional<qint64> RunStore::addPrompt(const PromptRecord& prompt)
{
    if (!isOpen()) {
        fail(QStringLiteral("run store not open"));
        return std::nullopt;
    }
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    const QString scrubbed = text(secrets::scrub(prompt.text));
    // The text once per run, task and role (migration 8): a later identical prompt names the row
    // that holds it.
    QVariant textOf(QMetaType::fromType<qint64>());
    if (!scrubbed.isEmpty()) {
        QSqlQuery same(db);
        same.prepare(QStringLiteral("SELECT id FROM prompts WHERE run_id = ? AND task = ? AND role = ?"
                                    " AND text_of IS NULL AND text = ? ORDER BY id LIMIT 1"));
        same.addBindValue(prompt.runId);
        same.addBindValue(text(prompt.task));
        same.addBindValue(text(prompt.role));
        same.addBindValue(scrubbed);
        if (same.exec() && same.next())
            textOf = same.value(0).toLongLong();
    }
    QSqlQuery query(db);
    query.prepare(QStringLiteral("INSERT INTO prompts (run_id, task, turn, sample, role, text, template_hash, created,"
                                 " text_of) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    query.addBindValue(prompt.runId);
    query.addBindValue(text(prompt.task));
    query.addBindValue(prompt.turn);
    query.addBindValue(prompt.sample);
    query.addBindValue(text(prompt.role));
    query.addBindValue(textOf.isNull() ? scrubbed : QStringLiteral(""));
    query.addBindValue(text(prompt.templateHash));
    query.addBindValue(nowText());
    query.addBindValue(textOf);
    if (!execOrFail(query, QStringLiteral("add prompt")))
        return std::nullopt;
    return query.lastInsertId().toLongLong();
}

std::optional<qint64> RunStore::addResponse(const ResponseRecord& response)
{
    if (!isOpen()) {
        fail(QStringLiteral("run store not open"));
        return std::nullopt;
    }
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.prepare(QStringLiteral("INSERT INTO responses (prompt_id, text, tokens_in, tokens_out, latency_ms, error,"
                                 " created) VALUES (?, ?, ?, ?, ?, ?, ?)"));
    query.addBindValue(response.promptId);
    query.addBindValue(text(secrets::scrub(response.text)));
    query.addBindValue(optionalValue(response.tokensIn));
    query.addBindValue(optionalValue(response.tokensOut));
    query.addBindValue(optionalValue(response.latencyMs));
    query.addBindValue(response.error.isEmpty() ? QVariant(QMetaType::fromType<QString>())
                                                : QVariant(secrets::scrub(response.error)));
    query.addBindValue(nowText());
    if (!execOrFail(query, QStringLiteral("add response")))
        return std::nullopt;
    return query.lastInsertId().toLongLong();
}

std::optional<qint64> RunStore::addCandidate(const CandidateRecord& candidate)
{
    if (!isOpen()) {
        fail(QStringLiteral("run store not open"));
        return std::nullopt;
    }
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.prepare(QStringLiteral("INSERT INTO candidates (response_id, task, turn, sample, cuda, python, parsed_ok,"
                                 " blocks_from, kernels, source_hash, cuda_line, python_line, created)"
                                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    query.addBindValue(candidate.responseId);
    query.addBindValue(text(candidate.task));
    query.addBindValue(candidate.turn);
    query.addBindValue(candidate.sample);
    query.addBindValue(text(secrets::scrub(candidate.cuda)));
    query.addBindValue(text(secrets::scrub(candidate.python)));
    query.addBindValue(candidate.parsedOk ? 1 : 0);
    query.addBindValue(blocksFromText(candidate.blocksFrom));
    query.addBindValue(kernelsValue(candidate.blocksFrom, candidate.kernels));
    query.addBindValue(candidate.sourceHash.isEmpty() ? QVariant(QMetaType::fromType<QString>())
                                                      : QVariant(candidate.sourceHash));
    query.addBindValue(lineValue(candidate.cudaLine));
    query.addBindValue(lineValue(candidate.pythonLine));
    query.addBindValue(nowText());
    if (!execOrFail(query, QStringLiteral("add candidate")))
        return std::nullopt;
    return query.lastInsertId().toLongLong();
}

std::optional<qint64> RunStore::addEvaluation(qint64 candidateId, const QJsonObject& result)
{
    if (!isOpen()) {
        fail(QStringLiteral("run store not open"));
        return std::nullopt;
    }
    const EvaluationResult decoded = decodeEvaluation(result);
    const QString status = decoded.statusName;
    if (status.isEmpty()) {
        fail(QStringLiteral("add evaluation: the result has no status"));
        return std::nullopt;
    }
    const std::optional<double> speedup = decoded.speedup;
    std::optional<double> maxAbsDiff;
    if (decoded.correctness)
        maxAbsDiff = decoded.correctness->maxAbsDiff;
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    // The evaluation and the candidate's blocks from its echo commit together or not at all.
    if (!db.transaction()) {
        fail(QStringLiteral("add evaluation: %1").arg(db.lastError().text()));
        return std::nullopt;
    }
    QSqlQuery query(db);
    query.prepare(
        QStringLiteral("INSERT INTO evaluations (candidate_id, status, speedup, max_abs_diff, result, created,"
                       " worker, dram_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    query.addBindValue(candidateId);
    query.addBindValue(status);
    query.addBindValue(optionalValue(speedup));
    query.addBindValue(optionalValue(maxAbsDiff));
    query.addBindValue(jsonText(shareWithOrigin(db, secrets::scrub(result)))); // logs may quote the environment
    query.addBindValue(nowText());
    const QString worker = result.value(QLatin1String("worker")).toString(); // EvaluationQueue's "where it ran"
    query.addBindValue(worker.isEmpty() ? QVariant(QMetaType::fromType<QString>()) : QVariant(worker));
    query.addBindValue(optionalValue(decoded.measuredDramBytes()));
    bool ok = execOrFail(query, QStringLiteral("add evaluation"));
    const qint64 evaluationId = query.lastInsertId().toLongLong();
    if (ok && decoded.candidate) {
        // What the worker evaluated, as it parsed it: it passed the format unless it said
        // format_error (whose echo holds what the parser had found when it stopped).
        const CandidateEcho& echo = *decoded.candidate;
        const bool parsedOk = decoded.status != EvaluationStatus::FormatError && !decoded.formatError;
        QSqlQuery update(db);
        update.prepare(
            QStringLiteral("UPDATE candidates SET cuda = ?, python = ?, parsed_ok = ?, blocks_from = 'worker',"
                           " kernels = ?, source_hash = ?, cuda_line = ?, python_line = ? WHERE id = ?"));
        update.addBindValue(text(secrets::scrub(echo.cuda)));
        update.addBindValue(text(secrets::scrub(echo.python)));
        update.addBindValue(parsedOk ? 1 : 0);
        update.addBindValue(kernelsValue(CandidateBlocksFrom::Worker, echo.kernels));
        update.addBindValue(echo.sourceHash.isEmpty() ? QVariant(QMetaType::fromType<QString>())
                                                      : QVariant(echo.sourceHash));
        update.addBindValue(lineValue(echo.cudaLine));
        update.addBindValue(lineValue(echo.pythonLine));
        update.addBindValue(candidateId);
        ok = execOrFail(update, QStringLiteral("store the worker's parse of the candidate"));
    }
    if (!ok) {
        db.rollback();
        return std::nullopt;
    }
    if (!db.commit()) {
        fail(QStringLiteral("add evaluation: %1").arg(db.lastError().text()));
        return std::nullopt;
    }
    return evaluationId;
}

// ---------------------------------------------------------------------------------------------

namespace {

const QString kRunColumns = QStringLiteral("id, name, created, regime, config, status");

RunInfo runFromQuery(const QSqlQuery& query)
{
    RunInfo info;
    info.id = query.value(0).toLongLong();
    info.name = query.value(1).toString();
    info.created = parseTime(query.value(2).toString());
    info.regime = query.value(3).toString();
    info.setConfig(jsonObject(query.value(4).toString()));
    info.status = query.value(5).toString();
    return info;
}

} // namespace

QList<RunInfo> RunStore::runs() const
{
    QList<RunInfo> list;
    if (!isOpen())
        return list;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    query.prepare(QStringLiteral("SELECT %1 FROM runs ORDER BY id").arg(kRunColumns));
    if (!execOrFail(query, QStringLiteral("list runs")))
        return list;
    while (query.next())
        list.append(runFromQuery(query));
    return list;
}

std::optional<RunInfo> RunStore::run(qint64 runId) const
{
    if (!isOpen())
        return std::nullopt;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.prepare(QStringLiteral("SELECT %1 FROM runs WHERE id = ?").arg(kRunColumns));
    query.addBindValue(runId);
    if (!execOrFail(query, QStringLiteral("read run")) || !query.next())
        return std::nullopt;
    return runFromQuery(query);
}

std::optional<CandidateRecord> RunStore::candidate(qint64 candidateId) const
{
    if (!isOpen())
        return std::nullopt;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.prepare(QStringLiteral("SELECT c.id, c.response_id, c.task, c.turn, c.sample, c.cuda, c.python, c.parsed_ok,"
                                 " c.blocks_from, c.kernels, c.source_hash, c.cuda_line, c.python_line, r.text"
                                 " FROM candidates c LEFT JOIN responses r ON r.id = c.response_id WHERE c.id = ?"));
    query.addBindValue(candidateId);
    if (!execOrFail(query, QStringLiteral("read candidate")) || !query.next())
        return std::nullopt;
    CandidateRecord c;
    c.id = query.value(0).toLongLong();
    c.responseId = query.value(1).toLongLong();
    c.task = query.value(2).toString();
    c.turn = query.value(3).toInt();
    c.sample = query.value(4).toInt();
    c.cuda = query.value(5).toString();
    c.python = query.value(6).toString();
    c.parsedOk = query.value(7).toInt() != 0;
    c.blocksFrom = blocksFromValue(query.value(8).toString());
    for (const QJsonValue& k : QJsonDocument::fromJson(query.value(9).toString().toUtf8()).array())
        c.kernels.append(k.toString());
    c.sourceHash = query.value(10).toString();
    c.cudaLine = query.value(11).toInt();
    c.pythonLine = query.value(12).toInt();
    c.answer = query.value(13).toString();
    return c;
}

std::optional<qint64> RunStore::addRecordedVerdict(qint64 candidateId, const QString& source, const QString& hardware,
                                                   const QJsonObject& verdict)
{
    if (!isOpen()) {
        fail(QStringLiteral("run store not open"));
        return std::nullopt;
    }
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.prepare(QStringLiteral("INSERT INTO recorded_verdicts (candidate_id, source, hardware, verdict, created)"
                                 " VALUES (?, ?, ?, ?, ?)"));
    query.addBindValue(candidateId);
    query.addBindValue(text(source));
    query.addBindValue(hardware.isEmpty() ? QVariant(QMetaType::fromType<QString>()) : QVariant(hardware));
    query.addBindValue(jsonText(secrets::scrub(verdict))); // a recorded log may quote an environment
    query.addBindValue(nowText());
    if (!execOrFail(query, QStringLiteral("add recorded verdict")))
        return std::nullopt;
    return query.lastInsertId().toLongLong();
}

QList<PromptRecord> RunStore::prompts(qint64 runId, const QString& task) const
{
    QList<PromptRecord> list;
    if (!isOpen())
        return list;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    query.prepare(QStringLiteral("SELECT p.id, p.turn, p.sample, p.role, coalesce(o.text, p.text), p.template_hash"
                                 " FROM prompts p LEFT JOIN prompts o ON o.id = p.text_of"
                                 " WHERE p.run_id = ? AND p.task = ? ORDER BY p.id"));
    query.addBindValue(runId);
    query.addBindValue(task);
    if (!execOrFail(query, QStringLiteral("list prompts")))
        return list;
    while (query.next())
        list.append(PromptRecord{query.value(0).toLongLong(), runId, task, query.value(1).toInt(),
                                 query.value(2).toInt(), query.value(3).toString(), query.value(4).toString(),
                                 query.value(5).toString()});
    return list;
}

QList<RecordedVerdictRecord> RunStore::recordedVerdicts(qint64 runId) const
{
    QList<RecordedVerdictRecord> list;
    if (!isOpen())
        return list;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    query.prepare(
        QStringLiteral("SELECT v.id, v.candidate_id, c.task, c.turn, c.sample, v.source, v.hardware, v.verdict"
                       " FROM recorded_verdicts v"
                       " JOIN candidates c ON c.id = v.candidate_id"
                       " JOIN responses r ON r.id = c.response_id"
                       " JOIN prompts p ON p.id = r.prompt_id"
                       " WHERE p.run_id = ? ORDER BY v.id"));
    query.addBindValue(runId);
    if (!execOrFail(query, QStringLiteral("list recorded verdicts")))
        return list;
    while (query.next()) {
        RecordedVerdictRecord record;
        record.id = query.value(0).toLongLong();
        record.candidateId = query.value(1).toLongLong();
        record.task = query.value(2).toString();
        record.turn = query.value(3).toInt();
        record.sample = query.value(4).toInt();
        record.source = query.value(5).toString();
        record.hardware = query.value(6).toString();
        record.verdict = jsonObject(query.value(7).toString());
        list.append(record);
    }
    return list;
}

QList<EvaluationRecord> RunStore::evaluations(qint64 runId) const
{
    return evaluationsAfter(runId, 0);
}

namespace {

const QString kEvaluationColumns =
    QStringLiteral("SELECT e.id, e.candidate_id, c.response_id, r.prompt_id, c.task, c.turn, c.sample, p.role,"
                   "       e.status, e.speedup, e.max_abs_diff, e.result, e.created, e.worker, e.dram_bytes"
                   " FROM evaluations e"
                   " JOIN candidates c ON c.id = e.candidate_id"
                   " JOIN responses r ON r.id = c.response_id"
                   " JOIN prompts p ON p.id = r.prompt_id");

EvaluationRecord evaluationRecord(const QSqlQuery& query)
{
    EvaluationRecord record;
    record.id = query.value(0).toLongLong();
    record.candidateId = query.value(1).toLongLong();
    record.responseId = query.value(2).toLongLong();
    record.promptId = query.value(3).toLongLong();
    record.task = query.value(4).toString();
    record.turn = query.value(5).toInt();
    record.sample = query.value(6).toInt();
    record.role = query.value(7).toString();
    record.status = query.value(8).toString();
    record.speedup = optionalDouble(query.value(9));
    record.maxAbsDiff = optionalDouble(query.value(10));
    record.result = jsonObject(query.value(11).toString());
    record.created = parseTime(query.value(12).toString());
    record.worker = query.value(13).toString();
    record.dramBytes = optionalDouble(query.value(14));
    return record; // completeRecord() finishes it
}

/// Puts back the parts a reused row shares with its origin (shareWithOrigin), then decodes the
/// row once: every reader of the row reads `decoded`. `origins` keeps the origins read so far.
void completeRecord(const QSqlDatabase& db, EvaluationRecord* record, QHash<qint64, QJsonObject>* origins)
{
    const QJsonObject shared = record->result.value(QLatin1String(kSharedPartsKey)).toObject();
    if (!shared.isEmpty()) {
        const qint64 originId = shared.value(QStringLiteral("evaluation")).toInteger();
        auto origin = origins->constFind(originId);
        if (origin == origins->cend()) {
            QSqlQuery query(db);
            query.prepare(QStringLiteral("SELECT result FROM evaluations WHERE id = ?"));
            query.addBindValue(originId);
            origin = origins->insert(originId, query.exec() && query.next() ? jsonObject(query.value(0).toString())
                                                                            : QJsonObject());
        }
        // An origin deleted by hand leaves the parts missing and the reference saying where they were.
        if (!origin->isEmpty()) {
            const QJsonArray names = shared.value(QStringLiteral("parts")).toArray();
            for (const SharedPart& part : kSharedParts)
                if (names.contains(QLatin1String(part.name)))
                    setPart(&record->result, part, partOf(*origin, part));
            record->result.remove(QLatin1String(kSharedPartsKey));
        }
    }
    record->decoded = decodeEvaluation(record->result);
}

} // namespace

std::optional<EvaluationRecord> RunStore::evaluation(qint64 evaluationId) const
{
    if (!isOpen())
        return std::nullopt;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.prepare(kEvaluationColumns + QStringLiteral(" WHERE e.id = ?"));
    query.addBindValue(evaluationId);
    if (!execOrFail(query, QStringLiteral("read evaluation")) || !query.next())
        return std::nullopt;
    EvaluationRecord record = evaluationRecord(query);
    QHash<qint64, QJsonObject> origins;
    completeRecord(QSqlDatabase::database(m_connection, false), &record, &origins);
    return record;
}

QList<TaskCandidate> RunStore::candidatesOfTask(const QString& task) const
{
    QList<TaskCandidate> list;
    if (!isOpen())
        return list;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    // Of the response only its flags, compile.ok (json_type keeps true apart from 1) and the
    // speed-up's interval, not the whole text (logs, timings, a cubin); the blocks only where no
    // hash names the code.
    query.prepare(QStringLiteral(
        "SELECT e.id, e.candidate_id, p.run_id, c.task, c.turn, c.sample, p.role, e.status, e.speedup,"
        "       CASE WHEN json_valid(e.result) THEN json_extract(e.result, '$.flags') END,"
        "       CASE WHEN NOT json_valid(e.result) THEN NULL"
        "            WHEN json_type(e.result, '$.compile.ok_compile') IN ('true', 'false')"
        "            THEN json_type(e.result, '$.compile.ok_compile') ELSE json_type(e.result, '$.compile.ok') END,"
        "       c.blocks_from, c.source_hash,"
        "       CASE WHEN c.blocks_from = 'worker' AND coalesce(c.source_hash, '') = '' THEN c.cuda END,"
        "       CASE WHEN c.blocks_from = 'worker' AND coalesce(c.source_hash, '') = '' THEN c.python END,"
        "       CASE WHEN json_valid(e.result) THEN json_extract(e.result, '$.timing.speedup_interval') END"
        " FROM candidates c"
        " JOIN evaluations e ON e.candidate_id = c.id"
        " JOIN responses r ON r.id = c.response_id"
        " JOIN prompts p ON p.id = r.prompt_id"
        " WHERE c.task = ? ORDER BY p.run_id, c.turn, c.sample, e.id"));
    query.addBindValue(task);
    if (!execOrFail(query, QStringLiteral("list candidates of task")))
        return list;
    while (query.next()) {
        TaskCandidate row;
        row.evaluationId = query.value(0).toLongLong();
        row.candidateId = query.value(1).toLongLong();
        row.runId = query.value(2).toLongLong();
        row.task = query.value(3).toString();
        row.turn = query.value(4).toInt();
        row.sample = query.value(5).toInt();
        row.role = query.value(6).toString();
        row.status = query.value(7).toString();
        row.speedup = optionalDouble(query.value(8));
        // The fields read, as the response has them, through the one decoder.
        QJsonObject part{{QStringLiteral("status"), row.status}};
        if (row.speedup)
            part.insert(QStringLiteral("speedup"), *row.speedup);
        const QJsonDocument flags = QJsonDocument::fromJson(query.value(9).toString().toUtf8());
        if (flags.isArray())
            part.insert(QStringLiteral("flags"), flags.array());
        const QString compileOk = query.value(10).toString();
        if (compileOk == QLatin1String("true") || compileOk == QLatin1String("false"))
            part.insert(QStringLiteral("compile"),
                        QJsonObject{{QStringLiteral("ok"), compileOk == QLatin1String("true")}});
        const QJsonDocument interval = QJsonDocument::fromJson(query.value(15).toString().toUtf8());
        if (interval.isObject())
            part.insert(QStringLiteral("timing"), QJsonObject{{QStringLiteral("speedup_interval"), interval.object()}});
        row.outcome = decodeEvaluation(part);
        if (blocksFromValue(query.value(11).toString()) == CandidateBlocksFrom::Worker) {
            const QString hash = query.value(12).toString();
            row.codeKey =
                !hash.isEmpty() ? hash : query.value(13).toString() + QLatin1Char('\0') + query.value(14).toString();
        }
        list.append(row);
    }
    return list;
}

QList<EvaluationRecord> RunStore::evaluationsAfter(qint64 runId, qint64 afterId) const
{
    QList<EvaluationRecord> list;
    if (!isOpen())
        return list;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    query.prepare(kEvaluationColumns + QStringLiteral(" WHERE p.run_id = ? AND e.id > ? ORDER BY e.id"));
    query.addBindValue(runId);
    query.addBindValue(afterId);
    if (!execOrFail(query, QStringLiteral("list evaluations")))
        return list;
    const QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    QHash<qint64, QJsonObject> origins;
    while (query.next()) {
        list.append(evaluationRecord(query));
        completeRecord(db, &list.last(), &origins);
    }
    return list;
}

QList<UnitResponse> RunStore::responses(qint64 runId, qint64 afterId, bool withText) const
{
    QList<UnitResponse> list;
    if (!isOpen())
        return list;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    query.prepare(QStringLiteral("SELECT p.task, p.turn, p.sample, p.role,"
                                 "       r.id, r.prompt_id, %1, r.tokens_in, r.tokens_out, r.latency_ms, r.error,")
                      .arg(withText ? QStringLiteral("r.text") : QStringLiteral("''")) +
                  QStringLiteral("       r.created"
                                 " FROM responses r JOIN prompts p ON p.id = r.prompt_id"
                                 " WHERE p.run_id = ? AND r.id > ? ORDER BY r.id"));
    query.addBindValue(runId);
    query.addBindValue(afterId);
    if (!execOrFail(query, QStringLiteral("list responses")))
        return list;
    while (query.next()) {
        UnitResponse row;
        row.unit = UnitKey{query.value(0).toString(), query.value(1).toInt(), query.value(2).toInt(),
                           query.value(3).toString()};
        row.response.id = query.value(4).toLongLong();
        row.response.promptId = query.value(5).toLongLong();
        row.response.text = query.value(6).toString();
        row.response.tokensIn = optionalInt(query.value(7));
        row.response.tokensOut = optionalInt(query.value(8));
        row.response.latencyMs = optionalInt(query.value(9));
        row.response.error = query.value(10).toString();
        row.created = parseTime(query.value(11).toString());
        list.append(row);
    }
    return list;
}

QSet<UnitKey> RunStore::completedUnits(qint64 runId) const
{
    QSet<UnitKey> units;
    if (!isOpen())
        return units;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    query.prepare(QStringLiteral("SELECT DISTINCT p.task, p.turn, p.sample, p.role, e.status"
                                 " FROM evaluations e"
                                 " JOIN candidates c ON c.id = e.candidate_id"
                                 " JOIN responses r ON r.id = c.response_id"
                                 " JOIN prompts p ON p.id = r.prompt_id"
                                 " WHERE p.run_id = ?"));
    query.addBindValue(runId);
    if (!execOrFail(query, QStringLiteral("completed units")))
        return units;
    while (query.next()) {
        if (isMachineFailure(query.value(4).toString()))
            continue; // says nothing about the candidate: evaluated again
        units.insert(UnitKey{query.value(0).toString(), query.value(1).toInt(), query.value(2).toInt(),
                             query.value(3).toString()});
    }
    return units;
}

QHash<UnitKey, ResponseRecord> RunStore::answeredUnits(qint64 runId) const
{
    QHash<UnitKey, ResponseRecord> units;
    if (!isOpen())
        return units;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    // Ordered by id, so the latest response of a unit wins.
    query.prepare(QStringLiteral("SELECT p.task, p.turn, p.sample, p.role,"
                                 "       r.id, r.prompt_id, r.text, r.tokens_in, r.tokens_out, r.latency_ms"
                                 " FROM responses r JOIN prompts p ON p.id = r.prompt_id"
                                 " WHERE p.run_id = ? AND r.error IS NULL ORDER BY r.id"));
    query.addBindValue(runId);
    if (!execOrFail(query, QStringLiteral("answered units")))
        return units;
    while (query.next()) {
        ResponseRecord response;
        response.id = query.value(4).toLongLong();
        response.promptId = query.value(5).toLongLong();
        response.text = query.value(6).toString();
        response.tokensIn = optionalInt(query.value(7));
        response.tokensOut = optionalInt(query.value(8));
        response.latencyMs = optionalInt(query.value(9));
        units.insert(UnitKey{query.value(0).toString(), query.value(1).toInt(), query.value(2).toInt(),
                             query.value(3).toString()},
                     response);
    }
    return units;
}

RunUsage RunStore::usage(qint64 runId) const
{
    RunUsage usage;
    if (!isOpen())
        return usage;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    query.prepare(QStringLiteral("SELECT COUNT(*), SUM(r.tokens_in), SUM(r.tokens_out), SUM(r.latency_ms)"
                                 " FROM responses r JOIN prompts p ON p.id = r.prompt_id WHERE p.run_id = ?"));
    query.addBindValue(runId);
    if (!execOrFail(query, QStringLiteral("usage totals")) || !query.next())
        return usage;
    usage.responses = query.value(0).toInt();
    usage.tokensIn = optionalInt(query.value(1)); // SUM over no non-NULL values is NULL
    usage.tokensOut = optionalInt(query.value(2));
    usage.latencyMs = optionalInt(query.value(3));
    return usage;
}

} // namespace kwb
