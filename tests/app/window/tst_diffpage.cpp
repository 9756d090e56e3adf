// The Diff page reads a task's candidates in the background (issue 15, scale): the read runs on
// a pool thread, the page says it is loading meanwhile, and after two quick task switches only the
// last task's candidates are shown, whichever read ends first. On windowfixture.h's database.

#include "app/analysispages.h"
#include "app/editor/candidatediffview.h"
#include "app/editor/codeeditor.h"
#include "app/editor/sidebysidediffview.h"
#include "app/workbenchdata.h"
#include "core/workers/jobtracker.h"
#include "windowfixture.h"

#include <QComboBox>
#include <QLabel>
#include <QMutex>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

using namespace kwb;
using namespace kwb::app;

namespace {

const QString kL11 = QStringLiteral("L1/1"), kL21 = QStringLiteral("L2/1"), kEmpty = QStringLiteral("L3/1");

/// What the page's reader saw: the threads it ran on and the tasks it was asked for.
struct ReaderLog
{
    QMutex mutex;
    QList<QThread*> threads;
    QStringList tasks;
};

QComboBox* taskCombo(DiffPage& page)
{
    return page.findChildren<QComboBox*>().value(0);
}

bool onlyTask(const QList<CandidateEntry>& entries, const QString& task)
{
    for (const CandidateEntry& e : entries)
        if (e.candidate.task != task)
            return false;
    return true;
}

} // namespace

class TestDiffPage : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_path;
    int m_l21Count = 0;

    void setUp(DiffPage& page)
    {
        QString error;
        QVERIFY2(page.setDatabase(m_path, &error), qPrintable(error));
        page.setTasks({{kEmpty, QStringLiteral("no candidates")},
                       {kL11, QStringLiteral("ReLU")},
                       {kL21, QStringLiteral("Conv")}});
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_path = m_dir.filePath(QStringLiteral("runs.db"));
        RunStore store;
        QVERIFY(store.open(m_path));
        kwb::test::writeWindowFixture(store);
        m_l21Count = int(candidatesOfTask(store, kL21).size());
        QCOMPARE(m_l21Count, 5);
        QCOMPARE(candidatesOfTask(store, kL11).size(), 5);
    }

    void readsOffTheGuiThread()
    {
        DiffPage page;
        auto log = std::make_shared<ReaderLog>();
        page.setCandidateReader([log](const QString& path, const QString& task) {
            {
                const QMutexLocker lock(&log->mutex);
                log->threads.append(QThread::currentThread());
                log->tasks.append(task);
            }
            return DiffPage::readCandidates(path, task);
        });
        setUp(page);
        QSignalSpy loaded(&page, &DiffPage::candidatesLoaded);
        QSignalSpy shown(&page, &DiffPage::pairShown);
        QVERIFY(page.showTask(kL21));
        // Nothing read on the way: the page says it is loading and has no candidates yet.
        QVERIFY(page.candidates().isEmpty());
        QVERIFY(page.isLoading());
        const QList<QLabel*> labels = page.findChildren<QLabel*>();
        QVERIFY(std::any_of(labels.cbegin(), labels.cend(),
                            [](QLabel* l) { return l->text().startsWith(QStringLiteral("Loading")); }));
        QTRY_COMPARE(loaded.size(), 1);
        QCOMPARE(loaded.at(0).at(0).toString(), kL21);
        QCOMPARE(page.candidates().size(), m_l21Count);
        QTRY_COMPARE(shown.size(), 1);
        QVERIFY(page.view()->hasCandidates());
        QVERIFY(!page.isLoading());
        // The timed side's speed-up carries its 95 % interval, in its header and in its picker.
        const QString timed = QStringLiteral("1.07\u00D7 [1.07\u20131.08]");
        const QList<QLabel*> shownLabels = page.findChildren<QLabel*>();
        QVERIFY(std::any_of(shownLabels.cbegin(), shownLabels.cend(),
                            [&](QLabel* l) { return l->text() == timed + QStringLiteral(" vs eager"); }));
        const QList<QComboBox*> pickers = page.findChildren<QComboBox*>();
        QVERIFY(std::any_of(pickers.cbegin(), pickers.cend(),
                            [&](QComboBox* c) { return c->currentText().endsWith(timed); }));
        // What each side was asked, from the store (issue 38 item 3): the fixture's generator prompt.
        const QString leftPrompts = page.view()->promptDiff()->leftEditor()->toPlainText();
        QVERIFY2(leftPrompts.contains(QStringLiteral("turn 1 · generator · sample")) &&
                     leftPrompts.contains(QStringLiteral("write it")),
                 qPrintable(leftPrompts));
        QVERIFY(page.view()->promptDiff()->rightEditor()->toPlainText().contains(QStringLiteral("write it")));
        const QMutexLocker lock(&log->mutex);
        QCOMPARE(log->tasks, QStringList{kL21});
        QVERIFY(log->threads.at(0) != nullptr);
        QVERIFY(log->threads.at(0) != QCoreApplication::instance()->thread());
        QVERIFY(log->threads.at(0) != page.thread());
    }

    void lastTaskWinsWhenTheFirstReadEndsLast()
    {
        // Two switches: to L1/1, whose read is held until L2/1's result is on the page, then to L2/1.
        if (QThread::idealThreadCount() < 2)
            QSKIP("needs two pool threads: the held read and the one after it");
        DiffPage page;
        auto release = std::make_shared<QSemaphore>();
        page.setCandidateReader([release](const QString& path, const QString& task) {
            if (task == kL11 && !release->tryAcquire(1, 60000))
                return QList<CandidateEntry>();
            return DiffPage::readCandidates(path, task);
        });
        setUp(page);
        QVERIFY(page.showTask(kEmpty));
        QTRY_VERIFY(!page.isLoading());
        QVERIFY(page.candidates().isEmpty());
        QSignalSpy loaded(&page, &DiffPage::candidatesLoaded);
        QComboBox* tasks = taskCombo(page);
        QVERIFY(tasks);
        tasks->setCurrentIndex(tasks->findData(kL11));
        tasks->setCurrentIndex(tasks->findData(kL21));
        QTRY_COMPARE(loaded.size(), 1);
        QCOMPARE(loaded.at(0).at(0).toString(), kL21);
        release->release(); // now L1/1's read ends, after L2/1's result
        QVERIFY(page.jobs()->waitForFunctions(60000));
        QTest::qWait(50); // its queued result, had it not been dropped, would arrive here
        QCoreApplication::processEvents();
        QCOMPARE(loaded.size(), 1);
        QCOMPARE(page.currentTask(), kL21);
        QCOMPARE(page.candidates().size(), m_l21Count);
        QVERIFY(onlyTask(page.candidates(), kL21));
        QComboBox* left = page.findChildren<QComboBox*>().value(1);
        QCOMPARE(left->count(), m_l21Count);
    }

    void lastTaskWinsWhenTheFirstReadEndsFirst()
    {
        // The first read ends before the second starts; its result is queued, not yet delivered.
        DiffPage page;
        setUp(page);
        QVERIFY(page.showTask(kEmpty));
        QTRY_VERIFY(!page.isLoading());
        QSignalSpy loaded(&page, &DiffPage::candidatesLoaded);
        QComboBox* tasks = taskCombo(page);
        tasks->setCurrentIndex(tasks->findData(kL11));
        QVERIFY(page.jobs()->waitForFunctions(60000));
        tasks->setCurrentIndex(tasks->findData(kL21));
        QTRY_VERIFY(!page.isLoading());
        QCOMPARE(loaded.size(), 1);
        QCOMPARE(loaded.at(0).at(0).toString(), kL21);
        QCOMPARE(page.candidates().size(), m_l21Count);
        QVERIFY(onlyTask(page.candidates(), kL21));
    }
};

QTEST_MAIN(TestDiffPage)
#include "tst_diffpage.moc"
