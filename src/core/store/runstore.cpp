#include "core/store/runstore.h"

#include "core/model/secrets.h"
#include "core/protocol/evaluationresult.h"

#include <QAtomicInteger>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMutex>
#include <QRegularExpression>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include <algorithm>
#include <tuple>

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

namespace kwb {

namespace {

QAtomicInteger<quint64> s_connectionCounter;

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

// ---------------------------------------------------------------------------------------------

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

QList<RunStore::Migration> RunStore::migrations()
{
    // Append only: a released migration never changes, a schema change is a new entry.
    return {
        {1,
         {
             QStringLiteral("CREATE TABLE runs ("
                            " id INTEGER PRIMARY KEY,"
                            " name TEXT NOT NULL,"
                            " created TEXT NOT NULL,"
                            " regime TEXT NOT NULL,"
                            " config TEXT NOT NULL,"
                            " status TEXT NOT NULL DEFAULT 'running'"
                            "  CHECK (status IN ('running', 'finished', 'cancelled')))"),
             QStringLiteral("CREATE TABLE prompts ("
                            " id INTEGER PRIMARY KEY,"
                            " run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
                            " task TEXT NOT NULL,"
                            " turn INTEGER NOT NULL,"
                            " sample INTEGER NOT NULL,"
                            " role TEXT NOT NULL,"
                            " text TEXT NOT NULL,"
                            " template_hash TEXT NOT NULL DEFAULT '',"
                            " created TEXT NOT NULL)"),
             QStringLiteral("CREATE INDEX prompts_unit ON prompts(run_id, task, turn, sample, role)"),
             QStringLiteral("CREATE TABLE responses ("
                            " id INTEGER PRIMARY KEY,"
                            " prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,"
                            " text TEXT NOT NULL DEFAULT '',"
                            " tokens_in INTEGER,"
                            " tokens_out INTEGER,"
                            " latency_ms INTEGER,"
                            " error TEXT,"
                            " created TEXT NOT NULL)"),
             QStringLiteral("CREATE INDEX responses_prompt ON responses(prompt_id)"),
             QStringLiteral("CREATE TABLE candidates ("
                            " id INTEGER PRIMARY KEY,"
                            " response_id INTEGER NOT NULL REFERENCES responses(id) ON DELETE CASCADE,"
                            " task TEXT NOT NULL,"
                            " turn INTEGER NOT NULL,"
                            " sample INTEGER NOT NULL,"
                            " cuda TEXT NOT NULL DEFAULT '',"
                            " python TEXT NOT NULL DEFAULT '',"
                            " parsed_ok INTEGER NOT NULL CHECK (parsed_ok IN (0, 1)),"
                            " created TEXT NOT NULL)"),
             QStringLiteral("CREATE INDEX candidates_response ON candidates(response_id)"),
             QStringLiteral("CREATE TABLE evaluations ("
                            " id INTEGER PRIMARY KEY,"
                            " candidate_id INTEGER NOT NULL REFERENCES candidates(id) ON DELETE CASCADE,"
                            " status TEXT NOT NULL,"
                            " speedup REAL,"
                            " max_abs_diff REAL,"
                            " result TEXT NOT NULL,"
                            " created TEXT NOT NULL)"),
             QStringLiteral("CREATE INDEX evaluations_candidate ON evaluations(candidate_id)"),
         }},
        // Issue 11: the profile that was called `kernelbench` had TF32 off; that profile is now
        // `kernelbench-fp32`, and `kernelbench` means KernelBench's own (PyTorch's default TF32
        // flags). Stored runs and results keep their meaning under the new name. CASE guards
        // json_extract against a text that is not JSON (it would fail the migration).
        {2,
         {
             QStringLiteral("UPDATE runs SET config = json_set(config, '$.protocol_profile', 'kernelbench-fp32')"
                            " WHERE CASE WHEN json_valid(config) THEN"
                            " json_extract(config, '$.protocol_profile') = 'kernelbench' ELSE 0 END"),
             QStringLiteral("UPDATE evaluations SET result = json_set(result, '$.profile.name', 'kernelbench-fp32')"
                            " WHERE CASE WHEN json_valid(result) THEN"
                            " json_extract(result, '$.profile.name') = 'kernelbench' ELSE 0 END"),
         }},
        // The worker is the only parser of the candidate format: candidates keep its echo. Rows
        // written before keep their client-parsed blocks, marked 'client'.
        {3,
         {
             QStringLiteral("ALTER TABLE candidates ADD COLUMN blocks_from TEXT NOT NULL DEFAULT 'client'"
                            " CHECK (blocks_from IN ('none', 'worker', 'client'))"),
             QStringLiteral("ALTER TABLE candidates ADD COLUMN kernels TEXT"), // a JSON array; NULL: unknown
             QStringLiteral("ALTER TABLE candidates ADD COLUMN source_hash TEXT"),
             QStringLiteral("ALTER TABLE candidates ADD COLUMN cuda_line INTEGER"),
             QStringLiteral("ALTER TABLE candidates ADD COLUMN python_line INTEGER"),
         }},
        // Issue 16: where each evaluation ran ("local:0", "gpu-box:1", "slurm-a100:2"). NULL for
        // rows written before, which all ran on a local GPU that nobody recorded.
        {4,
         {
             QStringLiteral("ALTER TABLE evaluations ADD COLUMN worker TEXT"),
         }},
        // Issue 15: the HBM bytes (read + write) a profile of the candidate measured (the
        // result's `traffic.dram_bytes`, docs/protocol.md); NULL where none was asked for or it
        // failed. Rows written before carry no profile, but any result that has one fills it.
        {5,
         {
             QStringLiteral("ALTER TABLE evaluations ADD COLUMN dram_bytes REAL"),
             QStringLiteral("UPDATE evaluations SET dram_bytes = json_extract(result, '$.traffic.dram_bytes')"
                            " WHERE CASE WHEN json_valid(result) THEN"
                            " json_extract(result, '$.traffic.profiled') = 1"
                            " AND json_extract(result, '$.traffic.dram_bytes') > 0 ELSE 0 END"),
         }},
        // The candidates of one task across runs (candidatesOfTask: the window's candidate
        // pickers and diff) are found by an index, not by a scan of every run's candidates.
        {6,
         {
             QStringLiteral("CREATE INDEX candidates_task ON candidates(task)"),
         }},
        // Issue 33: the verdicts a third party recorded for an imported generation (KernelBench's
        // eval_results.json), kept beside ours: which file said it, on what GPU, and the verdict
        // (generationimport.h's RecordedVerdict::verdict, JSON). Files written before have none.
        {7,
         {
             QStringLiteral("CREATE TABLE recorded_verdicts ("
                            " id INTEGER PRIMARY KEY,"
                            " candidate_id INTEGER NOT NULL REFERENCES candidates(id) ON DELETE CASCADE,"
                            " source TEXT NOT NULL,"
                            " hardware TEXT,"
                            " verdict TEXT NOT NULL,"
                            " created TEXT NOT NULL)"),
             QStringLiteral("CREATE INDEX recorded_verdicts_candidate ON recorded_verdicts(candidate_id)"),
         }},
    };
}

int RunStore::schemaVersion()
{
    return migrations().constLast().version;
}

RunStore::RunStore()
    : m_connection(QStringLiteral("kwb-runstore-%1").arg(++s_connectionCounter))
{}

RunStore::~RunStore()
{
    close();
}

bool RunStore::fail(const QString& message) const
{
    m_error = message;
    return false;
}

bool RunStore::execOrFail(QSqlQuery& query, const QString& what) const
{
    if (query.exec())
        return true;
    return fail(QStringLiteral("%1: %2").arg(what, query.lastError().text()));
}

// ---------------------------------------------------------------------------------------------
// What a file is (issue 38): decided here, read only, and presented as it is by the CLI and the
// window.

namespace {

QAtomicInteger<quint64> s_inspectCounter;

// Quick checks that passed, by the file as it was (path, size and times of it and its log): the
// window's pages open the same file many times.
QMutex s_checkedMutex;
QSet<QString> s_checked;

// Migrated copies of older read-only stores, shared by the stores reading one file as it is.
struct MigratedCopy
{
    QString path;
    int users = 0;
};
QMutex s_copiesMutex;
QHash<QString, MigratedCopy> s_copies;
QAtomicInteger<quint64> s_copyCounter;

QString walPath(const QString& path)
{
    return path + QStringLiteral("-wal");
}

/// The file as it is now: changes when it or its write-ahead log is written.
QString fileStateKey(const QString& path)
{
    const QFileInfo file(path), wal(walPath(path));
    return QStringLiteral("%1|%2|%3|%4|%5")
        .arg(file.canonicalFilePath())
        .arg(file.size())
        .arg(file.lastModified().toMSecsSinceEpoch())
        .arg(wal.exists() ? wal.size() : -1)
        .arg(wal.exists() ? wal.lastModified().toMSecsSinceEpoch() : 0);
}

/// Why `path` (a file or folder) may not be written, or empty. By the permission bits as well as
/// access(2), so that root, whom no permission stops, leaves a read-only file alone by intent.
QString notWritableReason(const QString& path, bool folder)
{
    const QByteArray native = QFile::encodeName(path);
    const auto readOnlyText = [&] {
        return folder ? QStringLiteral("its folder %1 is read-only").arg(path)
                      : QStringLiteral("the file is read-only");
    };
    if (::access(native.constData(), W_OK) != 0) {
        if (errno == EROFS)
            return QStringLiteral("it is on a read-only file system");
        if (errno == ENOENT)
            return folder ? QStringLiteral("its folder %1 does not exist").arg(path) : QString();
        return readOnlyText();
    }
    struct stat st;
    if (::stat(native.constData(), &st) == 0 && (st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0)
        return readOnlyText();
    return QString();
}

/// What a file that is not SQLite looks like, from its first bytes.
QString lookOf(const QByteArray& head)
{
    if (head.startsWith(QByteArray("\xFD"
                                   "7zXZ",
                                   5)))
        return QStringLiteral("an xz-compressed file; unpack it first with xz -dk");
    if (head.startsWith("\x1f\x8b"))
        return QStringLiteral("a gzip-compressed file; unpack it first with gunzip -k");
    if (head.startsWith("BZh"))
        return QStringLiteral("a bzip2-compressed file; unpack it first with bunzip2 -k");
    if (head.startsWith(QByteArray("\x28\xb5\x2f\xfd", 4)))
        return QStringLiteral("a zstd-compressed file; unpack it first with zstd -d");
    if (head.startsWith(QByteArray("PK\x03\x04", 4)))
        return QStringLiteral("a zip archive");
    const bool text = std::all_of(head.begin(), head.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u >= 0x20 || c == '\n' || c == '\r' || c == '\t';
    });
    return text ? QStringLiteral("a text file") : QStringLiteral("a file of another kind");
}

/// Percent-encodes what a SQLite URI filename may not hold as it is.
QString sqliteUri(const QString& path, const QString& query)
{
    QString encoded;
    for (const QChar c : QFileInfo(path).absoluteFilePath()) {
        if (c == QLatin1Char('%') || c == QLatin1Char('?') || c == QLatin1Char('#'))
            encoded += QStringLiteral("%%1").arg(c.unicode(), 2, 16, QLatin1Char('0'));
        else
            encoded += c;
    }
    return QStringLiteral("file:") + encoded + QLatin1Char('?') + query;
}

/// How to open a file that must not be written: read-only, and immutable where no write-ahead log
/// is pending and nobody may write it (then SQLite creates no -shm beside it, which a read-only
/// folder would refuse, and takes no lock).
QString readOnlyUri(const QString& path, bool nobodyWrites)
{
    const bool logPending = QFileInfo(walPath(path)).exists();
    return sqliteUri(path,
                     nobodyWrites && !logPending ? QStringLiteral("mode=ro&immutable=1") : QStringLiteral("mode=ro"));
}

const QString kReadOnlyOptions = QStringLiteral("QSQLITE_OPEN_URI;QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=5000");

/// The tables the migrations up to `version` create.
QStringList storeTables(const QList<RunStore::Migration>& migrations, int version)
{
    static const QRegularExpression create(
        QStringLiteral("^\\s*CREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?[\"`\\[]?(\\w+)"),
        QRegularExpression::CaseInsensitiveOption);
    QStringList tables;
    for (const RunStore::Migration& m : migrations) {
        if (m.version > version)
            break;
        for (const QString& statement : m.statements)
            if (const QRegularExpressionMatch match = create.match(statement); match.hasMatch())
                tables << match.captured(1);
    }
    return tables;
}

QString quoted(const QString& identifier)
{
    return QLatin1Char('"') + QString(identifier).replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QLatin1Char('"');
}

/// Damaged: reads each table in full and says which cannot be, and which index quick_check names.
QStringList unreadableParts(QSqlDatabase& db, const QList<std::tuple<QString, QString, QString, int>>& schema,
                            const QStringList& problems)
{
    QStringList parts;
    for (const auto& [type, name, table, root] : schema) {
        if (type != QLatin1String("table") || name.startsWith(QLatin1String("sqlite_")))
            continue;
        QSqlQuery count(db);
        const bool counted = count.exec(QStringLiteral("SELECT count(*) FROM %1").arg(quoted(name))) && count.next();
        const qint64 total = counted ? count.value(0).toLongLong() : -1;
        count.finish();
        QSqlQuery rows(db);
        rows.setForwardOnly(true);
        qint64 read = 0;
        if (rows.exec(QStringLiteral("SELECT * FROM %1").arg(quoted(name)))) {
            while (rows.next())
                ++read;
        }
        const bool failed = rows.lastError().type() != QSqlError::NoError;
        if (!failed && counted && read == total)
            continue;
        if (counted)
            parts << QStringLiteral("%1 (%2 of %3 rows read before the damage)").arg(name).arg(read).arg(total);
        else
            parts << QStringLiteral("%1 (%2 rows read before the damage; it cannot be counted)").arg(name).arg(read);
    }
    // quick_check names a damaged b-tree by its root page ("Tree 7 page 12 …"): an index there.
    static const QRegularExpression tree(QStringLiteral("\\bTree (\\d+) page"));
    QSet<int> roots;
    for (const QString& line : problems)
        for (auto it = tree.globalMatch(line); it.hasNext();)
            roots.insert(it.next().captured(1).toInt());
    for (const auto& [type, name, table, root] : schema)
        if (type == QLatin1String("index") && roots.contains(root))
            parts << QStringLiteral("index %1 of table %2 (REINDEX rebuilds it)").arg(name, table);
    return parts;
}

void classify(StoreFile& file, QSqlDatabase& db, const QList<RunStore::Migration>& migrations, bool quickCheck)
{
    const auto damaged = [&](const QString& why) {
        file.kind = StoreFile::Kind::Damaged;
        file.problems = QStringList{why};
    };
    QSqlQuery query(db);
    if (!query.exec(QStringLiteral("PRAGMA user_version")) || !query.next())
        return damaged(QStringLiteral("its header cannot be read: %1").arg(query.lastError().text()));
    file.schemaVersion = query.value(0).toInt();
    query.finish();
    QList<std::tuple<QString, QString, QString, int>> schema;
    if (!query.exec(QStringLiteral("SELECT type, name, tbl_name, rootpage FROM sqlite_master ORDER BY rowid")))
        return damaged(QStringLiteral("its list of tables cannot be read: %1").arg(query.lastError().text()));
    while (query.next()) {
        schema.append(
            {query.value(0).toString(), query.value(1).toString(), query.value(2).toString(), query.value(3).toInt()});
        if (query.value(0).toString() == QLatin1String("table") &&
            !query.value(1).toString().startsWith(QLatin1String("sqlite_")))
            file.tables << query.value(1).toString();
    }
    if (query.lastError().type() != QSqlError::NoError)
        return damaged(QStringLiteral("its list of tables cannot be read: %1").arg(query.lastError().text()));
    query.finish();

    const int newest = migrations.isEmpty() ? 0 : migrations.constLast().version;
    if (file.tables.isEmpty() && file.schemaVersion == 0) {
        file.kind = StoreFile::Kind::Empty;
        file.detail = QStringLiteral("a SQLite database without tables");
        return;
    }
    const QStringList expected = storeTables(migrations, std::min(file.schemaVersion, newest));
    QStringList present;
    for (const QString& t : expected)
        (file.tables.contains(t) ? present : file.missingTables) << t;
    if (file.schemaVersion == 0 || present.isEmpty()) {
        file.kind = StoreFile::Kind::Foreign;
        file.missingTables.clear();
        return;
    }
    if (!file.missingTables.isEmpty()) {
        file.kind = StoreFile::Kind::Damaged;
        return;
    }
    if (file.schemaVersion > newest) {
        file.kind = StoreFile::Kind::Newer;
        return;
    }
    file.kind = file.schemaVersion == newest ? StoreFile::Kind::Current : StoreFile::Kind::Older;
    if (!quickCheck)
        return;
    const QString key = fileStateKey(file.path);
    {
        const QMutexLocker lock(&s_checkedMutex);
        if (s_checked.contains(key))
            return;
    }
    QStringList lines;
    if (query.exec(QStringLiteral("PRAGMA quick_check(20)"))) {
        while (query.next()) // a row may hold several lines
            lines << query.value(0).toString().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    }
    // On a damaged file SQLite may end the check's rows with an error ("malformed"): the rows
    // say more; the error stands alone only when there is none.
    if (query.lastError().type() != QSqlError::NoError && lines.isEmpty())
        lines << query.lastError().text();
    query.finish();
    if (lines == QStringList{QStringLiteral("ok")}) {
        // Remembered only for a file left alone a while: a write soon after could keep the
        // (coarse) mtime and size it had when checked.
        const QDateTime settled = QDateTime::currentDateTimeUtc().addSecs(-2);
        const QFileInfo main(file.path), wal(walPath(file.path));
        if (main.lastModified() < settled && (!wal.exists() || wal.lastModified() < settled)) {
            const QMutexLocker lock(&s_checkedMutex);
            s_checked.insert(key);
        }
        return;
    }
    lines.removeAll(QStringLiteral("*** in database main ***"));
    file.kind = StoreFile::Kind::Damaged;
    file.problems = lines;
    file.unreadable = unreadableParts(db, schema, lines);
}

QString listed(const QStringList& names, int most = 8)
{
    if (names.size() <= most)
        return names.join(QStringLiteral(", "));
    return QStringLiteral("%1 and %2 more").arg(names.mid(0, most).join(QStringLiteral(", "))).arg(names.size() - most);
}

} // namespace

QString StoreFile::summary() const
{
    const QString readOnlyText = readOnly ? QStringLiteral(" It opens read-only: %1.").arg(readOnlyReason) : QString();
    switch (kind) {
    case Kind::Missing:
        return readOnly ? QStringLiteral("%1 does not exist, and no run store can be created there: %2.")
                              .arg(path, readOnlyReason)
                        : QStringLiteral("%1 does not exist: a new run store is created there.").arg(path);
    case Kind::Empty:
        return QStringLiteral("%1 is %2, not a run store; it was left as it is. A run store is made in it only when "
                              "asked.")
            .arg(path, detail.isEmpty() ? QStringLiteral("an empty file (0 bytes)") : detail);
    case Kind::Current:
        return QStringLiteral("%1 is a run store (schema %2).").arg(path).arg(schemaVersion) + readOnlyText;
    case Kind::Older:
        return QStringLiteral("%1 is a run store of schema %2, written by an older build: opening it migrates it to "
                              "schema %3%4.")
            .arg(path)
            .arg(schemaVersion)
            .arg(currentVersion)
            .arg(readOnly ? QStringLiteral(" in a copy, since it may not be written (%1); the file stays as it is")
                                .arg(readOnlyReason)
                          : QString());
    case Kind::Newer:
        return QStringLiteral("run store %1 has schema version %2, newer than this build of Kernel Workbench "
                              "supports (%3): open it with a newer kwb. It was left as it is.")
            .arg(path)
            .arg(schemaVersion)
            .arg(currentVersion);
    case Kind::Foreign:
        return QStringLiteral("%1 is a SQLite database of another program (%2), not a run store; it was left "
                              "unchanged.")
            .arg(path, tables.isEmpty() ? QStringLiteral("no tables, user_version %1").arg(schemaVersion)
                                        : QStringLiteral("tables: %1").arg(listed(tables)));
    case Kind::NotSQLite:
        return QStringLiteral("%1 is not a SQLite database (%2), so not a run store; it was left unchanged.")
            .arg(path, detail);
    case Kind::Damaged: {
        QString text;
        if (!missingTables.isEmpty()) {
            text = QStringLiteral("%1 is a damaged run store: it lacks the tables %2 of schema %3.")
                       .arg(path, missingTables.join(QStringLiteral(", ")))
                       .arg(schemaVersion);
        } else {
            text = QStringLiteral("%1 is a damaged SQLite database: SQLite's quick check finds %2 (first: \"%3\").")
                       .arg(path,
                            problems.size() == 1
                                ? QStringLiteral("a problem")
                                : QStringLiteral("%1%2 problems")
                                      .arg(problems.size() >= 20 ? QStringLiteral("at least ") : QString())
                                      .arg(problems.size()),
                            problems.value(0));
            if (!unreadable.isEmpty())
                text += QStringLiteral(" What cannot be read: %1.").arg(unreadable.join(QStringLiteral("; ")));
            else if (!tables.isEmpty())
                text += QStringLiteral(" Every table reads in full: the damage is in pages no table uses.");
        }
        return text + QStringLiteral(" It was left as it is (to keep what can be read: sqlite3 %1 .recover | sqlite3 "
                                     "recovered.db).")
                          .arg(path);
    }
    case Kind::Unreadable: break;
    }
    return QStringLiteral("%1 cannot be read: %2.").arg(path, detail);
}

QString StoreFile::writeRefusal() const
{
    if (kind != Kind::Missing && !isRunStore())
        return summary();
    if (!readOnly)
        return QString();
    return kind == Kind::Missing
               ? QStringLiteral("cannot create a run store at %1: %2.").arg(path, readOnlyReason)
               : QStringLiteral("%1 is a run store that may not be written: %2.").arg(path, readOnlyReason);
}

StoreFile RunStore::inspect(const QString& path, bool quickCheck)
{
    return inspect(path, migrations(), quickCheck);
}

StoreFile RunStore::inspect(const QString& path, const QList<Migration>& migrationList, bool quickCheck)
{
    StoreFile file;
    file.path = path;
    file.currentVersion = migrationList.isEmpty() ? 0 : migrationList.constLast().version;
    const QFileInfo info(path);
    if (!info.exists()) {
        file.kind = StoreFile::Kind::Missing;
        file.readOnlyReason = notWritableReason(info.absolutePath(), true);
        file.readOnly = !file.readOnlyReason.isEmpty();
        return file;
    }
    if (info.isDir()) {
        file.kind = StoreFile::Kind::NotSQLite;
        file.detail = QStringLiteral("a folder");
        return file;
    }
    file.readOnlyReason = notWritableReason(path, false);
    if (file.readOnlyReason.isEmpty())
        file.readOnlyReason = notWritableReason(info.absolutePath(), true);
    file.readOnly = !file.readOnlyReason.isEmpty();
    QFile raw(path);
    if (!raw.open(QIODevice::ReadOnly)) {
        file.kind = StoreFile::Kind::Unreadable;
        file.detail = raw.errorString();
        return file;
    }
    const QByteArray head = raw.read(512);
    raw.close();
    if (head.isEmpty() && info.size() == 0) {
        file.kind = StoreFile::Kind::Empty;
        return file;
    }
    if (!head.startsWith(QByteArray("SQLite format 3\0", 16))) {
        file.kind = StoreFile::Kind::NotSQLite;
        file.detail = lookOf(head);
        return file;
    }

    // Read only. A file nobody may write is opened immutable where no log is pending; another
    // read-write where no log is pending (its reads write nothing, and its close leaves no -wal or
    // -shm behind, where a read-only connection's would), else read-only (a read-write connection's
    // close would checkpoint another program's pending log into its file).
    const QString name = QStringLiteral("kwb-inspect-%1").arg(++s_inspectCounter);
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        if (file.readOnly || QFileInfo(walPath(path)).exists()) {
            db.setDatabaseName(readOnlyUri(path, file.readOnly));
            db.setConnectOptions(kReadOnlyOptions);
        } else {
            db.setDatabaseName(path);
            db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000"));
        }
        if (!db.isValid() || !db.open()) {
            file.kind = StoreFile::Kind::Unreadable;
            file.detail = db.isValid() ? db.lastError().text()
                                       : QStringLiteral("the Qt SQLite driver (QSQLITE) is not available");
        } else {
            classify(file, db, migrationList, quickCheck);
            db.close();
        }
    }
    QSqlDatabase::removeDatabase(name);
    return file;
}

bool RunStore::addConnection(const QString& databaseName, const QString& options)
{
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connection);
    if (!db.isValid()) {
        db = QSqlDatabase();
        QSqlDatabase::removeDatabase(m_connection);
        return fail(QStringLiteral("the Qt SQLite driver (QSQLITE) is not available"));
    }
    db.setDatabaseName(databaseName);
    db.setConnectOptions(options);
    if (!db.open()) {
        const QString why = db.lastError().text();
        db = QSqlDatabase();
        QSqlDatabase::removeDatabase(m_connection);
        return fail(QStringLiteral("cannot open run store %1: %2").arg(m_path, why));
    }
    return true;
}

bool RunStore::open(const QString& path, const OpenOptions& options)
{
    return open(path, migrations(), options);
}

bool RunStore::open(const QString& path, const QList<Migration>& migrationList, const OpenOptions& options)
{
    close();
    m_error.clear();
    m_path = path;
    m_readOnly = false;
    m_migratedFrom = 0;
    m_file = inspect(path, migrationList);
    using Kind = StoreFile::Kind;
    using Access = OpenOptions::Access;
    const Kind kind = m_file.kind;
    const bool create = kind == Kind::Missing || (kind == Kind::Empty && options.initEmpty);
    if (!create && !m_file.isRunStore())
        return fail(m_file.summary());
    if (create && options.access == Access::Read)
        return fail(kind == Kind::Missing ? QStringLiteral("%1: no such file").arg(path) : m_file.summary());
    if (m_file.readOnly && (create || options.access == Access::Write)) {
        StoreFile asStore = m_file; // an empty file asked to be made a store: refused as a store would be
        if (kind == Kind::Empty)
            asStore.kind = Kind::Current;
        return fail(asStore.writeRefusal());
    }
    if (m_file.readOnly || options.access == Access::Read) {
        m_readOnly = true;
        const bool ok = kind == Kind::Older ? openMigratedCopy(migrationList) : openReadOnly(m_file.readOnly);
        if (!ok) {
            const QString error = m_error;
            close();
            m_error = error;
        }
        return ok;
    }

    // Read-write: a run store, a new file, or an empty one the user asked to be made a store.
    // Wait for a writer in another process rather than failing at once.
    if (!addConnection(path, QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000")))
        return false;
    bool ok = true;
    {
        QSqlDatabase db = QSqlDatabase::database(m_connection, false);
        QSqlQuery query(db);
        // The file may have changed since it was inspected: read its version again.
        if (!query.exec(QStringLiteral("PRAGMA user_version")) || !query.next()) {
            ok = fail(QStringLiteral("%1 is not a run store (SQLite): %2").arg(path, query.lastError().text()));
        } else {
            const int version = query.value(0).toInt();
            const int newest = migrationList.isEmpty() ? 0 : migrationList.constLast().version;
            query.finish();
            if (version > newest) {
                ok = fail(QStringLiteral("run store %1 has schema version %2, newer than this build of Kernel "
                                         "Workbench supports (%3): open it with a newer kwb")
                              .arg(path)
                              .arg(version)
                              .arg(newest));
            }
        }
        // journal_mode and foreign_keys cannot change inside a transaction: set them first.
        if (ok && (!query.exec(QStringLiteral("PRAGMA journal_mode=WAL")) || !query.next() ||
                   query.value(0).toString().compare(QLatin1String("wal"), Qt::CaseInsensitive) != 0)) {
            ok = fail(QStringLiteral("cannot switch %1 to WAL mode: %2").arg(path, query.lastError().text()));
        }
        query.finish();
        if (ok && !query.exec(QStringLiteral("PRAGMA synchronous=NORMAL")))
            ok = fail(QStringLiteral("PRAGMA synchronous: %1").arg(query.lastError().text()));
        if (ok && !query.exec(QStringLiteral("PRAGMA foreign_keys=ON")))
            ok = fail(QStringLiteral("PRAGMA foreign_keys: %1").arg(query.lastError().text()));
    }
    if (ok)
        ok = migrate(migrationList);
    if (!ok) {
        const QString error = m_error;
        close();
        m_error = error;
        // What this open created, still without a table: not left behind as an "empty file".
        if (kind == Kind::Missing && inspect(path, migrationList, false).kind == Kind::Empty)
            QFile::remove(path);
    } else if (kind == Kind::Older) {
        m_migratedFrom = m_file.schemaVersion;
    }
    return ok;
}

bool RunStore::openReadOnly(bool nobodyWrites)
{
    if (!addConnection(readOnlyUri(m_path, nobodyWrites), kReadOnlyOptions))
        return false;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    if (!query.exec(QStringLiteral("PRAGMA user_version")) || !query.next())
        return fail(QStringLiteral("cannot read run store %1: %2").arg(m_path, query.lastError().text()));
    query.finish();
    if (!query.exec(QStringLiteral("PRAGMA foreign_keys=ON")))
        return fail(QStringLiteral("PRAGMA foreign_keys: %1").arg(query.lastError().text()));
    return true;
}

bool RunStore::openMigratedCopy(const QList<Migration>& migrationList)
{
    // Shared by every store reading this file as it is now; removed when the last one closes.
    const QString key = fileStateKey(m_path) + QLatin1Char('|') + QString::number(migrationList.constLast().version);
    QString copy;
    {
        const QMutexLocker lock(&s_copiesMutex);
        auto it = s_copies.find(key);
        if (it != s_copies.end()) {
            ++it->users;
            copy = it->path;
        }
    }
    if (copy.isEmpty()) {
        const QString made =
            QDir(QDir::tempPath())
                .filePath(
                    QStringLiteral("kwb-store-%1-%2.db").arg(QCoreApplication::applicationPid()).arg(++s_copyCounter));
        QFile::remove(made);
        // VACUUM INTO writes a consistent copy from a read-only connection.
        if (!addConnection(readOnlyUri(m_path, m_file.readOnly), kReadOnlyOptions))
            return false;
        {
            QSqlQuery query(QSqlDatabase::database(m_connection, false));
            if (!query.exec(QStringLiteral("VACUUM INTO '%1'")
                                .arg(QString(made).replace(QLatin1Char('\''), QStringLiteral("''"))))) {
                const QString why = query.lastError().text();
                query.finish();
                close();
                QFile::remove(made);
                return fail(QStringLiteral("cannot copy run store %1 to migrate it: %2").arg(m_path, why));
            }
        }
        close();
        {
            RunStore migrated;
            if (!migrated.open(made, migrationList, OpenOptions{OpenOptions::Access::Write, false})) {
                QFile::remove(made);
                return fail(
                    QStringLiteral("cannot migrate a copy of run store %1: %2").arg(m_path, migrated.errorString()));
            }
        }
        const QMutexLocker lock(&s_copiesMutex);
        auto it = s_copies.find(key);
        if (it != s_copies.end()) { // another store made one meanwhile
            ++it->users;
            copy = it->path;
            for (const QString& suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")})
                QFile::remove(made + suffix);
        } else {
            s_copies.insert(key, MigratedCopy{made, 1});
            copy = made;
        }
    }
    m_copy = key;
    // Nobody writes the copy: immutable, so no -wal or -shm appears beside it.
    return addConnection(readOnlyUri(copy, true), kReadOnlyOptions);
}

QString RunStore::openNote() const
{
    if (!isOpen())
        return QString();
    if (!m_copy.isEmpty()) {
        return QStringLiteral("%1 is a run store of schema %2 that may not be written (%3): it is read through a copy "
                              "migrated to schema %4; the file stays as it is.")
            .arg(m_path)
            .arg(m_file.schemaVersion)
            .arg(m_file.readOnlyReason.isEmpty() ? QStringLiteral("opened for reading") : m_file.readOnlyReason)
            .arg(m_file.currentVersion);
    }
    if (m_migratedFrom > 0) {
        return QStringLiteral("%1 was a run store of schema %2; it is now migrated to schema %3, which builds before "
                              "this one cannot open.")
            .arg(m_path)
            .arg(m_migratedFrom)
            .arg(m_file.currentVersion);
    }
    if (m_readOnly && m_file.readOnly)
        return QStringLiteral("%1 is opened read-only: %2.").arg(m_path, m_file.readOnlyReason);
    return QString();
}

bool RunStore::migrate(const QList<Migration>& migrationList)
{
    QSqlDatabase db = QSqlDatabase::database(m_connection, false);
    const int current = fileSchemaVersion();
    for (const Migration& migration : migrationList) {
        if (migration.version <= current)
            continue;
        if (!db.transaction())
            return fail(QStringLiteral("migration to schema %1: %2").arg(migration.version).arg(db.lastError().text()));
        bool ok = true;
        QString why;
        {
            QSqlQuery query(db);
            for (const QString& statement : migration.statements) {
                if (!query.exec(statement)) {
                    ok = false;
                    why = QStringLiteral("%1 (in: %2)").arg(query.lastError().text(), statement);
                    break;
                }
            }
            // user_version lives in the file header and is part of the transaction.
            if (ok && !query.exec(QStringLiteral("PRAGMA user_version=%1").arg(migration.version))) {
                ok = false;
                why = query.lastError().text();
            }
        }
        if (!ok) {
            db.rollback();
            return fail(QStringLiteral("migration of %1 to schema %2 failed, file left at schema %3: %4")
                            .arg(m_path)
                            .arg(migration.version)
                            .arg(current)
                            .arg(why));
        }
        if (!db.commit())
            return fail(QStringLiteral("migration to schema %1: %2").arg(migration.version).arg(db.lastError().text()));
    }
    return true;
}

void RunStore::close()
{
    if (QSqlDatabase::contains(m_connection)) {
        {
            QSqlDatabase db = QSqlDatabase::database(m_connection, false);
            db.close();
        }
        QSqlDatabase::removeDatabase(m_connection);
    }
    if (!m_copy.isEmpty()) {
        const QMutexLocker lock(&s_copiesMutex);
        auto it = s_copies.find(m_copy);
        if (it != s_copies.end() && --it->users <= 0) {
            for (const QString& suffix :
                 {QString(), QStringLiteral("-wal"), QStringLiteral("-shm"), QStringLiteral("-journal")})
                QFile::remove(it->path + suffix);
            s_copies.erase(it);
        }
        m_copy.clear();
    }
}

bool RunStore::isOpen() const
{
    return QSqlDatabase::contains(m_connection) && QSqlDatabase::database(m_connection, false).isOpen();
}

int RunStore::fileSchemaVersion() const
{
    if (!isOpen())
        return -1;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    if (!query.exec(QStringLiteral("PRAGMA user_version")) || !query.next())
        return -1;
    return query.value(0).toInt();
}

QString RunStore::journalMode() const
{
    if (!isOpen())
        return QString();
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    if (!query.exec(QStringLiteral("PRAGMA journal_mode")) || !query.next())
        return QString();
    return query.value(0).toString().toLower();
}

QString RunStore::quickCheck() const
{
    if (!isOpen())
        return QStringLiteral("not open");
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    if (!query.exec(QStringLiteral("PRAGMA quick_check")))
        return query.lastError().text();
    QStringList lines;
    while (query.next())
        lines.append(query.value(0).toString());
    return lines.join(QLatin1Char('\n'));
}

QString RunStore::integrityCheck() const
{
    if (!isOpen())
        return QStringLiteral("not open");
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    if (!query.exec(QStringLiteral("PRAGMA integrity_check")))
        return query.lastError().text();
    QStringList lines;
    while (query.next())
        lines.append(query.value(0).toString());
    return lines.join(QLatin1Char('\n'));
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
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.prepare(QStringLiteral("INSERT INTO prompts (run_id, task, turn, sample, role, text, template_hash, created)"
                                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    query.addBindValue(prompt.runId);
    query.addBindValue(text(prompt.task));
    query.addBindValue(prompt.turn);
    query.addBindValue(prompt.sample);
    query.addBindValue(text(prompt.role));
    query.addBindValue(text(secrets::scrub(prompt.text)));
    query.addBindValue(text(prompt.templateHash));
    query.addBindValue(nowText());
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
    query.addBindValue(jsonText(secrets::scrub(result))); // logs may quote the environment
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
    query.prepare(QStringLiteral("SELECT id, turn, sample, role, text, template_hash FROM prompts"
                                 " WHERE run_id = ? AND task = ? ORDER BY id"));
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
    record.decoded = decodeEvaluation(record.result); // once: every reader of the row reads this
    return record;
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
    return evaluationRecord(query);
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
    while (query.next())
        list.append(evaluationRecord(query));
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
