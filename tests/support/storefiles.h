#pragma once
// Real files of each kind RunStore tells apart (issue 38), for the store's, the CLI's and the
// window's tests: another program's SQLite database, a 0-byte file, a run store with two pages
// overwritten, and read-only files and folders. A snapshot of a file and its folder (bytes, mtime,
// the names beside it) says whether opening it changed anything: tests may run as root, whom no
// permission stops, so "it could not be written" is checked by what is on disk, not by an error.

#include "core/store/runstore.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QString>
#include <QStringList>

namespace kwb::test {

/// What opening a file may not change: its bytes, its mtime and the folder's names.
struct FileSnapshot
{
    QByteArray sha256;
    QDateTime modified;
    qint64 size = -1;
    QStringList folder;

    static FileSnapshot of(const QString& path)
    {
        FileSnapshot s;
        QFile f(path);
        if (f.open(QIODevice::ReadOnly))
            s.sha256 = QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex();
        const QFileInfo info(path);
        s.modified = info.lastModified();
        s.size = info.size();
        s.folder =
            QDir(info.absolutePath()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot, QDir::Name);
        return s;
    }
    friend bool operator==(const FileSnapshot& a, const FileSnapshot& b)
    {
        return a.sha256 == b.sha256 && a.modified == b.modified && a.size == b.size && a.folder == b.folder;
    }
    QString describe() const
    {
        return QStringLiteral("%1 bytes, sha256 %2, modified %3, beside it: %4")
            .arg(size)
            .arg(QString::fromLatin1(sha256.left(12)), modified.toString(Qt::ISODateWithMs),
                 folder.join(QLatin1Char(' ')));
    }
};

/// Another program's SQLite database: one table `foo` with a few rows (in WAL mode when asked,
/// which leaves the file in WAL mode once closed, with no -wal beside it).
inline bool writeForeignDatabase(const QString& path, bool wal = false)
{
    static int counter = 0;
    const QString name = QStringLiteral("foreign-%1").arg(++counter);
    bool ok = false;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(path);
        if (db.open()) {
            QSqlQuery q(db);
            ok = (!wal || q.exec(QStringLiteral("PRAGMA journal_mode=WAL"))) &&
                 q.exec(QStringLiteral("CREATE TABLE foo (id INTEGER PRIMARY KEY, word TEXT)")) &&
                 q.exec(QStringLiteral("INSERT INTO foo (word) VALUES ('one'), ('two'), ('three')"));
            q.finish();
            db.close();
        }
    }
    QSqlDatabase::removeDatabase(name);
    return ok;
}

inline bool writeEmptyFile(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate);
}

/// A run store with one run of `units` prompts, answers, candidates and evaluations, each text a
/// few KiB (so most pages are overflow pages of the prompts and answers).
inline bool writeStore(const QString& path, int units = 40)
{
    RunStore store;
    if (!store.open(path))
        return false;
    const auto run = store.createRun(QStringLiteral("stored"), QStringLiteral("zero_shot"), QJsonObject());
    if (!run)
        return false;
    for (int i = 0; i < units; ++i) {
        const QString bulk = QStringLiteral("unit %1 ").arg(i).repeated(600);
        const auto prompt = store.addPrompt(
            {0, *run, QStringLiteral("L1/%1").arg(i + 1), 1, 0, QStringLiteral("generator"), bulk, QString()});
        if (!prompt)
            return false;
        const auto response = store.addResponse({0, *prompt, bulk, 1, 2, 3, QString()});
        if (!response)
            return false;
        CandidateRecord candidate;
        candidate.responseId = *response;
        candidate.task = QStringLiteral("L1/%1").arg(i + 1);
        candidate.turn = 1;
        const auto candidateId = store.addCandidate(candidate);
        if (!candidateId ||
            !store.addEvaluation(*candidateId, QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")},
                                                           {QStringLiteral("speedup"), 1.5}}))
            return false;
    }
    return true;
}

/// Overwrites two pages of a closed store (a third and two thirds in) with 0xA5: a b-tree page
/// gets an impossible page type, an overflow page an impossible next page, so SQLite's quick check
/// fails as it did on the file of issue 38.
inline bool overwriteTwoPages(const QString& path, qint64 pageSize = 4096)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadWrite))
        return false;
    const qint64 pages = f.size() / pageSize;
    if (pages < 6)
        return false;
    for (const qint64 page : {pages / 3, 2 * pages / 3}) { // 0-based: page 1 (the schema) is never hit
        if (!f.seek(page * pageSize) || f.write(QByteArray(int(pageSize), char(0xA5))) != pageSize)
            return false;
    }
    return f.flush();
}

/// Takes the write permission of a file or folder away for its lifetime, and gives it back.
class ReadOnlyGuard
{
public:
    explicit ReadOnlyGuard(const QString& path)
        : m_path(path)
        , m_before(QFile::permissions(path))
    {
        QFile::setPermissions(
            path, m_before & ~(QFile::WriteOwner | QFile::WriteUser | QFile::WriteGroup | QFile::WriteOther));
    }
    ~ReadOnlyGuard() { QFile::setPermissions(m_path, m_before); }
    ReadOnlyGuard(const ReadOnlyGuard&) = delete;
    ReadOnlyGuard& operator=(const ReadOnlyGuard&) = delete;

private:
    QString m_path;
    QFile::Permissions m_before;
};

} // namespace kwb::test
