#include "core/store/runstore.h"

#include <QAtomicInteger>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMutex>
#include <QRegularExpression>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>

#include <algorithm>
#include <tuple>

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

namespace kwb {

namespace {

QAtomicInteger<quint64> s_connectionCounter;

} // namespace

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
        // A prompt whose text an earlier prompt of the same run, task and role already holds (a
        // turn's n samples are sent one prompt; session 28's 12 runs stored 3,750 prompts, 420
        // distinct, 35 MB) keeps '' and names that row; RunStore::prompts reads the text from there.
        // Within one run, so no run's prompts depend on another's. Rows written before keep theirs.
        {8,
         {
             QStringLiteral("ALTER TABLE prompts ADD COLUMN text_of INTEGER REFERENCES prompts(id)"),
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

} // namespace kwb
