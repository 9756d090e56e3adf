// Where kwb and kernel-workbench find kwb-worker: --worker, then $KWB_WORKER, then next to the
// program; an explicit choice that does not work is an error, never a silent fallback.

#include "core/workers/workerlocator.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;

class TestWorkerLocator : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_worker;  // an executable kwb-worker in m_dir
    QString m_notExec; // a plain file

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_worker = m_dir.filePath(QStringLiteral("kwb-worker"));
        QVERIFY(QFile::copy(QStringLiteral(KWB_FAKEWORKER), m_worker));
        m_notExec = m_dir.filePath(QStringLiteral("plain"));
        QFile plain(m_notExec);
        QVERIFY(plain.open(QIODevice::WriteOnly));
    }

    void explicitPathWins()
    {
        const auto result = WorkerLocator::locate(QStringLiteral(KWB_FAKEWORKER), m_worker, m_dir.path());
        QVERIFY(result.found());
        QCOMPARE(result.program, QStringLiteral(KWB_FAKEWORKER));
        QCOMPARE(result.origin, QStringLiteral("--worker"));
    }

    void environmentBeforeProgramDir()
    {
        const auto result = WorkerLocator::locate(QString(), QStringLiteral(KWB_FAKEWORKER), m_dir.path());
        QVERIFY(result.found());
        QCOMPARE(result.origin, QStringLiteral("$KWB_WORKER"));
    }

    void nextToProgram()
    {
        const auto result = WorkerLocator::locate(QString(), QString(), m_dir.path());
        QVERIFY(result.found());
        QCOMPARE(result.program, m_worker);
        QCOMPARE(result.origin, QStringLiteral("next to the program"));
    }

    void errors_data()
    {
        QTest::addColumn<QString>("explicitPath");
        QTest::addColumn<QString>("environment");
        QTest::addColumn<QString>("expected");
        QTest::newRow("explicit missing")
            << QStringLiteral("/nonexistent/kwb-worker") << QString()
            << QStringLiteral("given by --worker is unusable: /nonexistent/kwb-worker does not exist");
        QTest::newRow("explicit not executable") << m_notExec << QString() << QStringLiteral("is not executable");
        QTest::newRow("explicit directory") << m_dir.path() << QString() << QStringLiteral("is a directory");
        QTest::newRow("environment missing, no fallback") << QString() << QStringLiteral("/nonexistent/kwb-worker")
                                                          << QStringLiteral("given by $KWB_WORKER is unusable");
        QTest::newRow("nothing next to the program")
            << QString() << QString() << QStringLiteral("kwb-worker not found");
    }

    void errors()
    {
        QFETCH(QString, explicitPath);
        QFETCH(QString, environment);
        QFETCH(QString, expected);
        QTemporaryDir empty;
        // The environment error must win even though a worker sits in m_dir.
        const QString programDir = environment.isEmpty() && explicitPath.isEmpty() ? empty.path() : m_dir.path();
        const auto result = WorkerLocator::locate(explicitPath, environment, programDir);
        QVERIFY(!result.found());
        QVERIFY2(result.error.contains(expected), qPrintable(result.error));
    }
};

QTEST_GUILESS_MAIN(TestWorkerLocator)
#include "tst_workerlocator.moc"
