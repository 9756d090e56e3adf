// The commit a build names (core/config/buildinfo.h, cmake/KwbBuildCommit.cmake; issue 38 item 1):
// this build's, and what the script writes for a clean checkout, a changed one, a folder inside
// someone else's checkout and a tarball.

#include "core/config/buildinfo.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace kwb;

namespace {

QString run(const QString& program, const QStringList& arguments, const QString& dir, int* exitCode = nullptr)
{
    QProcess p;
    p.setWorkingDirectory(dir);
    // The test's own repositories, not one a caller's git variables point at.
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const char* variable : {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"})
        environment.remove(QString::fromLatin1(variable));
    p.setProcessEnvironment(environment);
    p.start(program, arguments);
    if (!p.waitForFinished(60000))
        return QString();
    if (exitCode)
        *exitCode = p.exitCode();
    return QString::fromUtf8(p.readAllStandardOutput()).trimmed();
}

QString git(const QString& dir, const QStringList& arguments, int* exitCode = nullptr)
{
    return run(QStringLiteral("git"),
               QStringList{QStringLiteral("-c"), QStringLiteral("user.name=kwb test"), QStringLiteral("-c"),
                           QStringLiteral("user.email=kwb@test.invalid")} +
                   arguments,
               dir, exitCode);
}

} // namespace

class TestBuildCommit : public QObject
{
    Q_OBJECT

    QString m_git = QStandardPaths::findExecutable(QStringLiteral("git"));

    // Runs the build's script for sourceDir and returns the commit it wrote.
    QString scriptAnswer(const QString& sourceDir, const QString& output)
    {
        int code = -1;
        run(QStringLiteral(KWB_CMAKE),
            {QStringLiteral("-DSOURCE_DIR=") + sourceDir, QStringLiteral("-DOUTPUT=") + output, QStringLiteral("-P"),
             QStringLiteral(KWB_BUILD_COMMIT_SCRIPT)},
            sourceDir, &code);
        if (code != 0)
            return QStringLiteral("script failed");
        QFile f(output);
        if (!f.open(QIODevice::ReadOnly))
            return QStringLiteral("no output");
        const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("QStringLiteral\\(\"([^\"]*)\"\\)"))
                                              .match(QString::fromUtf8(f.readAll()));
        return m.hasMatch() ? m.captured(1) : QStringLiteral("no literal");
    }

private slots:
    void thisBuildNamesACommitOfItsSource()
    {
        const QString commit = kwbCommit();
        QVERIFY2(QRegularExpression(QStringLiteral("^[0-9A-Za-z._/+-]+$")).match(commit).hasMatch(),
                 qPrintable(commit));
        if (m_git.isEmpty() || !QFileInfo::exists(QStringLiteral(KWB_SOURCE_DIR "/.git")))
            QSKIP("the source is not a git checkout here: the build says \"unknown\", checked by the script cases");
        QVERIFY2(commit != QLatin1String("unknown"), "built from a git checkout, yet no commit");
        // The commit is one of the source's (HEAD may have moved on since the build).
        QString described = commit;
        if (described.endsWith(QLatin1String("-dirty")))
            described.chop(6);
        int code = -1;
        git(QStringLiteral(KWB_SOURCE_DIR),
            {QStringLiteral("cat-file"), QStringLiteral("-e"), described + QStringLiteral("^{commit}")}, &code);
        QCOMPARE(code, 0);
    }

    void scriptFollowsTheCheckout()
    {
        if (m_git.isEmpty())
            QSKIP("no git on PATH");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString src = dir.filePath(QStringLiteral("src"));
        const QString out = dir.filePath(QStringLiteral("buildcommit.cpp"));
        QVERIFY(QDir().mkpath(src + QStringLiteral("/sub")));
        QFile file(src + QStringLiteral("/a.txt"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("one\n");
        file.close();
        int code = -1;
        git(src, {QStringLiteral("init"), QStringLiteral("-q")}, &code);
        QCOMPARE(code, 0);
        git(src, {QStringLiteral("add"), QStringLiteral("a.txt")});
        git(src, {QStringLiteral("commit"), QStringLiteral("-q"), QStringLiteral("-m"), QStringLiteral("one")}, &code);
        QCOMPARE(code, 0);
        const QString head =
            git(src, {QStringLiteral("rev-parse"), QStringLiteral("--short=12"), QStringLiteral("HEAD")});
        QCOMPARE(head.size(), 12);

        QCOMPARE(scriptAnswer(src, out), head);
        // An untracked file does not make the build another commit's …
        QFile untracked(src + QStringLiteral("/new.txt"));
        QVERIFY(untracked.open(QIODevice::WriteOnly));
        untracked.close();
        const QDateTime written = QFileInfo(out).lastModified();
        QTest::qWait(1100);
        QCOMPARE(scriptAnswer(src, out), head);
        QCOMPARE(QFileInfo(out).lastModified(), written); // the same answer rewrites nothing
        // … a changed tracked file does.
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Append));
        file.write("two\n");
        file.close();
        QCOMPARE(scriptAnswer(src, out), head + QStringLiteral("-dirty"));
        // A folder inside another checkout (a tarball unpacked there) is not that checkout's commit.
        QCOMPARE(scriptAnswer(src + QStringLiteral("/sub"), dir.filePath(QStringLiteral("sub.cpp"))),
                 QStringLiteral("unknown"));
    }

    void scriptSaysUnknownForATarball()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QCOMPARE(scriptAnswer(dir.path(), dir.filePath(QStringLiteral("buildcommit.cpp"))), QStringLiteral("unknown"));
    }

    void versionWithItsCommit()
    {
        QCOMPARE(versionWithCommit(QStringLiteral("0.1.0"), QStringLiteral("036ecb77d146-dirty")),
                 QStringLiteral("0.1.0 (036ecb77d146-dirty)"));
        QCOMPARE(versionWithCommit(QStringLiteral("0.1.0"), QString()), QStringLiteral("0.1.0"));
    }
};

QTEST_GUILESS_MAIN(TestBuildCommit)
#include "tst_buildcommit.moc"
