#pragma once
// The run store: one SQLite file (Qt SQL, QSQLITE driver) holding each run's whole configuration
// and every prompt, response, parsed candidate and evaluation, each committed as it finishes, so a
// killed run loses at most the item in flight and resumes without repeating finished work.
//
// The file is opened in WAL mode with synchronous=NORMAL (a committed row survives the process
// being killed; only a power loss may drop the last transactions) and foreign keys on. The schema
// carries its version in `PRAGMA user_version`; opening applies the missing migrations in order,
// each in its own transaction, and refuses a file written by a newer build.
//
// Opening a file never changes what is not a run store (issue 38): RunStore::inspect() decides,
// reading only, what a file is (StoreFile: a run store of this schema or an older one, a newer
// one, an empty file, another program's SQLite database, not SQLite at all, damaged: SQLite's
// quick check fails), and open() writes only into a run store (migrating an older one, which it
// says: openNote()), into a path where nothing is (a new store), or into an empty file when asked
// (OpenOptions::initEmpty). A file or folder that may not be written is opened read-only: by the
// permission bits, not by a failed write, so that it holds for root too (SQLite's mode=ro, and
// immutable=1 where no write-ahead log is pending, so not even a -shm file appears beside it).
//
// A RunStore owns one connection with a name of its own, so several stores (and threads, one
// store each) can be open at once. Use a store only from the thread that opened it (a Qt SQL
// rule).

#include "core/protocol/devicefacts.h"
#include "core/protocol/evaluationresult.h"
// The stored configuration's type (its one reader and writer): a value type of the run layer that
// the store decodes each run's row into.
#include "core/config/runconfig.h"

#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QSet>
#include <QString>
#include <QStringList>

#include <optional>

class QSqlQuery;

namespace kwb {

namespace RunStatus {
inline const QString Running = QStringLiteral("running");
inline const QString Finished = QStringLiteral("finished");
inline const QString Cancelled = QStringLiteral("cancelled");
} // namespace RunStatus

struct RunInfo
{
    qint64 id = 0;
    QString name;
    QDateTime created; ///< UTC
    QString regime;
    /// What the run was made with, decoded once when the run is read (RunConfig::fromJson, the one
    /// reader of its keys).
    RunConfig config;
    /// runs.config as stored, byte for byte (what an older or hand-written configuration says
    /// beyond RunConfig's fields stays there); read it through `config`.
    QJsonObject configJson;
    /// The GPU it was made on (config.gpu, the worker's `device` answer): the layers below a run
    /// (the task catalog's eager times) select runs by it.
    DeviceFacts gpu;
    QString status; ///< a RunStatus

    /// Sets configJson and what is decoded from it (config, gpu): as the store reads a row.
    void setConfig(const QJsonObject& json);
};

struct PromptRecord
{
    qint64 id = 0; ///< set by the store
    qint64 runId = 0;
    QString task; ///< "L2/1"
    int turn = 0;
    int sample = 0;
    QString role; ///< "generator", "analyzer", "zero_shot", …
    QString text;
    QString templateHash;
};

struct ResponseRecord
{
    qint64 id = 0;
    qint64 promptId = 0;
    QString text;
    std::optional<qint64> tokensIn;
    std::optional<qint64> tokensOut;
    std::optional<qint64> latencyMs;
    QString error; ///< empty when the request succeeded
};

/// Who read a candidate's blocks out of its answer (candidates.blocks_from).
enum class CandidateBlocksFrom {
    None,   ///< nobody yet: the answer was never evaluated, or no evaluation echoed its parse (a
            ///< timeout, a crash): blocks empty, parsedOk meaningless
    Worker, ///< the worker's `candidate` echo of the evaluation (docs/protocol.md): what it evaluated
    Client, ///< a client's own parse, kept from a file written before schema 2 (or given by a caller)
};

/// A candidate: the model answer it comes from and the blocks found in it. A run adds it before
/// evaluating (blocks empty, blocksFrom None); addEvaluation() fills the blocks from the worker's
/// echo. The client parses nothing (one parser of the candidate format: the worker's).
struct CandidateRecord
{
    qint64 id = 0;
    qint64 responseId = 0;
    QString task;
    int turn = 0;
    int sample = 0;
    QString cuda;          ///< the cuda block (empty: none, or not known)
    QString python;        ///< the python block
    bool parsedOk = false; ///< the answer is in the candidate format (no format_error)
    CandidateBlocksFrom blocksFrom = CandidateBlocksFrom::None;
    QStringList kernels;              ///< the cuda block's __global__ kernels (Worker only)
    QString sourceHash;               ///< the worker's hash of the cuda block (Worker only)
    int cudaLine = 0, pythonLine = 0; ///< answer lines where the blocks start (0: unknown)
    QString answer; ///< read only: the model's whole answer (its response text), filled by candidate()
};

/// One evaluation with the unit it belongs to (joined from its candidate and prompt).
struct EvaluationRecord
{
    qint64 id = 0;
    qint64 candidateId = 0;
    qint64 responseId = 0;
    qint64 promptId = 0;
    QString task;
    int turn = 0;
    int sample = 0;
    QString role;
    QString status; ///< docs/protocol.md, plus the supervisor's timeout/crashed
    std::optional<double> speedup;
    std::optional<double> maxAbsDiff;
    /// The whole evaluate response as the worker sent it, kept byte for byte (what a report's raw
    /// view shows and an export writes), or the supervisor's failure.
    QJsonObject result;
    QDateTime created; ///< UTC
    QString worker;    ///< where it ran ("local:0", "gpu-box:1"; workertarget.h); empty: not recorded (schema < 4)
    /// HBM bytes a profile of the candidate measured (EvaluationResult::measuredDramBytes(), the
    /// `dram_bytes` column, schema 5); empty: not profiled.
    std::optional<double> dramBytes;

    /// result, decoded once, when the store read the row; unset in a record built by hand.
    std::optional<EvaluationResult> decoded;

    /// The result, decoded (core/protocol/evaluationresult.h): the store's decode of the row, or
    /// for a record built by hand, result decoded now.
    EvaluationResult evaluation() const { return decoded ? *decoded : decodeEvaluation(result); }
};

/// A verdict a third party recorded for an imported candidate (`kwb import kernelbench`: an entry
/// of KernelBench's eval_results.json), kept beside ours. `verdict` is {"source", "compiled",
/// "correct", "runtime_ms", "ref_runtime_ms", "speedup", "hardware", "device", "error",
/// "correctness_trials", "recorded"} (core/run/generationimport.h; a field not recorded is null).
struct RecordedVerdictRecord
{
    qint64 id = 0;
    qint64 candidateId = 0;
    QString task;
    int turn = 0;
    int sample = 0;
    QString source;   ///< the file it came from, relative to the imported folder
    QString hardware; ///< the GPU the third party measured on; empty: not recorded
    QJsonObject verdict;
};

/// An evaluated candidate of a task as a picker lists it (RunStore::candidatesOfTask): who it is
/// and how it ended, without the evaluation's whole response (RunStore::evaluation reads that).
struct TaskCandidate
{
    qint64 evaluationId = 0;
    qint64 candidateId = 0;
    qint64 runId = 0;
    QString task;
    int turn = 0;
    int sample = 0;
    QString role;
    QString status; ///< the evaluations.status column
    std::optional<double> speedup;
    /// The response's status, speed-up, flags, compile.ok and timing.speedup_interval only, decoded
    /// by decodeEvaluation: enough for the one rule of selection (countsAsCorrect, compiled,
    /// trustedSpeedup) and for the speed-up as formatSpeedup prints it.
    EvaluationResult outcome;
    /// What the candidate's code is, to tell two apart: the worker's hash of its blocks, else the
    /// blocks (a NUL between them); empty when no worker echoed its parse (nothing to compare).
    QString codeKey;
};

/// What a run's model requests cost: sums over its responses (failed requests included). A sum is
/// absent when no response of the run recorded that number.
struct RunUsage
{
    int responses = 0;
    std::optional<qint64> tokensIn;
    std::optional<qint64> tokensOut;
    std::optional<qint64> latencyMs; ///< model time: the requests' latencies added up
};

/// A unit of work in a run: one prompt of one role for one sample of one turn of one task.
struct UnitKey
{
    QString task;
    int turn = 0;
    int sample = 0;
    QString role;

    friend bool operator==(const UnitKey& a, const UnitKey& b)
    {
        return a.turn == b.turn && a.sample == b.sample && a.task == b.task && a.role == b.role;
    }
    friend bool operator!=(const UnitKey& a, const UnitKey& b) { return !(a == b); }
};
size_t qHash(const UnitKey& key, size_t seed = 0) noexcept;

/// A stored model answer (or a failed request, with its error) and the unit it answers, joined
/// from its prompt.
struct UnitResponse
{
    UnitKey unit;
    ResponseRecord response;
    QDateTime created; ///< UTC
};

/// What a file is, as RunStore::inspect() finds it without writing anything: the one definition
/// the CLI and the window present (summary()).
struct StoreFile
{
    enum class Kind {
        Missing,    ///< nothing at the path: opening it for writing creates a run store
        Empty,      ///< a 0-byte file, or a SQLite database without tables: a store only when asked
        Current,    ///< a run store of this build's schema
        Older,      ///< a run store of an older schema: opening it migrates it (and says so)
        Newer,      ///< a run store of a newer build's schema: refused, left as it is
        Foreign,    ///< another program's SQLite database (its tables in `tables`): never written
        NotSQLite,  ///< not a SQLite database (a folder, text, a compressed file, …): never written
        Damaged,    ///< a SQLite database that fails PRAGMA quick_check, or lacks a store's tables
        Unreadable, ///< cannot be read (permissions, an I/O error)
    };

    Kind kind = Kind::Missing;
    QString path;
    int schemaVersion = 0;     ///< PRAGMA user_version (run stores: their schema)
    int currentVersion = 0;    ///< the schema this build writes (what an Older store is migrated to)
    QStringList tables;        ///< the file's tables, sqlite_* left out (Foreign: what it holds)
    QStringList missingTables; ///< Damaged: a run store's tables that are not there
    QStringList problems;      ///< Damaged: PRAGMA quick_check's lines (at most 20)
    /// Damaged: what cannot be read, one entry per table or index ("evaluations (812 of 1154 rows
    /// read before the damage)"); empty when every table reads in full.
    QStringList unreadable;
    QString detail; ///< NotSQLite: what the file looks like; Unreadable: the system's reason
    /// The file or its folder may not be written (by their permission bits, also for root, or a
    /// read-only file system): opened read-only. readOnlyReason says which.
    bool readOnly = false;
    QString readOnlyReason; ///< "the file is read-only", "its folder /x is read-only", …

    bool isRunStore() const { return kind == Kind::Current || kind == Kind::Older; }
    /// Why runs cannot be written into this file (a run launched, resumed or imported), or empty
    /// where they can: a run store or a missing file, in a place that may be written.
    QString writeRefusal() const;
    /// A plain sentence (or two) saying what the file is and what opening it does or why it is not
    /// opened, with the path: "… is a SQLite database of another program (tables: foo), not a run
    /// store; it was left unchanged."
    QString summary() const;
};

/// How RunStore::open may treat the file.
struct OpenOptions
{
    enum class Access {
        /// Write where the file and its folder may be written (create a missing file, migrate an
        /// older store), else read-only: what the window's pages and `kwb report` want.
        Auto,
        /// Must be written (`kwb run`, import, a run launched or resumed): a read-only file or folder
        /// is refused with the reason.
        Write,
        /// Never written, not even migrated: an older store is read through a migrated copy in the
        /// temporary folder; a missing file is not created.
        Read,
    };
    Access access = Access::Auto;
    /// Make a 0-byte file (or a SQLite database without tables) a run store: only when the user
    /// asked for it (the window's "Make it a run store").
    bool initEmpty = false;
};

class RunStore
{
public:
    /// One schema step: the statements that take a file from version-1 to version.
    struct Migration
    {
        int version = 0;
        QStringList statements;
    };

    RunStore();
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    /// The migrations this build knows, in order; the last one's version is schemaVersion().
    static QList<Migration> migrations();
    static int schemaVersion();

    /// What the file at `path` is, read without writing anything (not even a journal beside it),
    /// PRAGMA quick_check included unless quickCheck is false (then a SQLite file of the store's
    /// tables is Current or Older unchecked). A check that passed is remembered for the file as it
    /// is (size and times of it and its write-ahead log), so the pages' many opens check it once.
    static StoreFile inspect(const QString& path, bool quickCheck = true);
    static StoreFile inspect(const QString& path, const QList<Migration>& migrations, bool quickCheck = true);

    /// Opens the file as inspect() finds it: a run store (an older one migrated), a missing file
    /// created; anything else refused, untouched, with errorString() = file().summary(). A file
    /// or folder that may not be written is opened read-only (options.access Auto or Read) or
    /// refused (Write). False on failure, with errorString() saying why.
    bool open(const QString& path, const OpenOptions& options = {});
    /// open() with another migration list: for tests of the migration machinery.
    bool open(const QString& path, const QList<Migration>& migrations, const OpenOptions& options = {});
    void close();
    bool isOpen() const;
    QString path() const { return m_path; }
    QString errorString() const { return m_error; }
    /// What open() found (also after it failed).
    const StoreFile& file() const { return m_file; }
    /// Opened read-only: nothing can be added (file().readOnlyReason, or Access::Read asked).
    bool isReadOnly() const { return m_readOnly; }
    /// The schema the file had when open() migrated it (0: not migrated).
    int migratedFrom() const { return m_migratedFrom; }
    /// What open() did that a user should hear of, one sentence, or empty: a migration ("… was a
    /// run store of schema 1; it is now migrated to schema 8, which builds before this one cannot
    /// open."), a read-only open and why, an older read-only store read through a migrated copy.
    QString openNote() const;

    /// The file's `user_version` (0 for a new file before migration), -1 when not open.
    int fileSchemaVersion() const;
    /// `PRAGMA journal_mode` ("wal" once open).
    QString journalMode() const;
    /// `PRAGMA integrity_check` joined by newlines ("ok" for a sound file).
    QString integrityCheck() const;
    /// `PRAGMA quick_check` joined by newlines ("ok" for a sound file).
    QString quickCheck() const;

    // Inserts. Each runs in its own transaction (autocommit) and returns the new row's id, or
    // nullopt with errorString() set.
    /// config: RunConfig::toJson() (core/config/runconfig.h)
    std::optional<qint64> createRun(const QString& name, const QString& regime, const QJsonObject& config);
    bool setRunStatus(qint64 runId, const QString& status);
    std::optional<qint64> addPrompt(const PromptRecord& prompt);
    std::optional<qint64> addResponse(const ResponseRecord& response);
    std::optional<qint64> addCandidate(const CandidateRecord& candidate);
    /// Stores an evaluate response (docs/protocol.md) for a candidate: status, speedup and
    /// correctness.max_abs_diff are pulled out into columns, the whole object is kept as JSON.
    /// A failure without a response is stored as {"status": "timeout", "message": …}.
    /// When the response echoes the worker's parse (`candidate`), the candidate's blocks, kernels,
    /// hash, lines and parsedOk become that echo (blocksFrom Worker), in the same transaction; an
    /// evaluation without an echo leaves the candidate as it was.
    std::optional<qint64> addEvaluation(qint64 candidateId, const QJsonObject& result);
    /// Keeps a verdict a third party recorded for a candidate (schema 7), beside our evaluation.
    std::optional<qint64> addRecordedVerdict(qint64 candidateId, const QString& source, const QString& hardware,
                                             const QJsonObject& verdict);

    // Queries.
    QList<RunInfo> runs() const;
    std::optional<RunInfo> run(qint64 runId) const;
    /// Every evaluation of a run, in insertion order.
    QList<EvaluationRecord> evaluations(qint64 runId) const;
    /// The prompts a run sent for a task (every role, turn and sample, failed requests' too), in
    /// insertion order: what a sample was actually asked (provenance.h's promptsSentFor).
    QList<PromptRecord> prompts(qint64 runId, const QString& task) const;
    /// The recorded verdicts of a run's candidates, in insertion order.
    QList<RecordedVerdictRecord> recordedVerdicts(qint64 runId) const;
    /// One candidate with its code and its answer (the diff view), nullopt for an unknown id.
    std::optional<CandidateRecord> candidate(qint64 candidateId) const;
    /// One evaluation with its unit, nullopt for an unknown id.
    std::optional<EvaluationRecord> evaluation(qint64 evaluationId) const;
    /// Every evaluated candidate of `task` over all runs, by run, then turn, sample and insertion;
    /// reads a few columns and fields per evaluation, not its whole response (the Diff page's
    /// pickers, on a database of thousands of evaluations).
    QList<TaskCandidate> candidatesOfTask(const QString& task) const;
    /// The evaluations of a run stored after the one with id `afterId`, in insertion order (a live
    /// view appends them without reading the whole run again).
    QList<EvaluationRecord> evaluationsAfter(qint64 runId, qint64 afterId) const;
    /// The responses of a run with an id above `afterId` (0: all), failed requests included, in
    /// insertion order; without their text unless withText (a report needs only the errors).
    QList<UnitResponse> responses(qint64 runId, qint64 afterId = 0, bool withText = true) const;
    /// The units of a run with at least one evaluated candidate: `kwb run --resume` skips them.
    /// A candidate that failed to parse counts once its format_error evaluation is stored; an
    /// evaluation that ended in a machine failure (wireName(EvaluationStatus::isMachineFailure)) does not count.
    QSet<UnitKey> completedUnits(qint64 runId) const;
    /// The units of a run whose model request succeeded (a response without error), with the
    /// latest such response: resume reuses them (e.g. the analyzer's text) instead of asking again.
    QHash<UnitKey, ResponseRecord> answeredUnits(qint64 runId) const;
    /// Token and model-time totals of a run's responses (for reports).
    RunUsage usage(qint64 runId) const;

private:
    bool fail(const QString& message) const;
    bool execOrFail(QSqlQuery& query, const QString& what) const;
    bool migrate(const QList<Migration>& migrations);
    /// Adds the connection for `databaseName` with the given connect options; false with m_error set.
    bool addConnection(const QString& databaseName, const QString& options);
    bool openReadOnly(bool nobodyWrites);
    bool openMigratedCopy(const QList<Migration>& migrations);

    QString m_connection;
    QString m_path;
    mutable QString m_error;
    StoreFile m_file;
    bool m_readOnly = false;
    int m_migratedFrom = 0;
    QString m_copy; ///< the migrated copy an older read-only store is read through (empty: none)
};

} // namespace kwb
