// RunListModel and RunTreeModel on a fixture database written through RunStore (runfixture.h),
// each under QAbstractItemModelTester; live appends insert rows (no reset) and keep a selection;
// the store's new read helpers (evaluationsAfter, responses).

#include "app/runs/runlistmodel.h"
#include "app/runs/runtreemodel.h"
#include "runfixture.h"

#include <QAbstractItemModelTester>
#include <QItemSelectionModel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;
using namespace kwb::app;
using namespace kwb::test;

class TestRunModels : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    RunStore m_store;
    Fixture m_fixture;

    static QString cell(const QAbstractItemModel& model, const QModelIndex& index, int column)
    {
        return model.index(index.row(), column, index.parent()).data().toString();
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QVERIFY2(m_store.open(m_dir.filePath(QStringLiteral("fixture.db"))), qPrintable(m_store.errorString()));
        const auto fixture = writeFixture(m_store);
        QVERIFY2(fixture, qPrintable(m_store.errorString()));
        m_fixture = *fixture;
    }

    void storeReadsRowsAfterAnId()
    {
        const QList<EvaluationRecord> all = m_store.evaluations(m_fixture.agent);
        QCOMPARE(all.size(), 5);
        const QList<EvaluationRecord> later = m_store.evaluationsAfter(m_fixture.agent, all.at(2).id);
        QCOMPARE(later.size(), 2);
        QCOMPARE(later.first().id, all.at(3).id);
        QCOMPARE(later.first().task, QStringLiteral("L1/2"));
        QCOMPARE(later.first().turn, 2);

        const QList<UnitResponse> responses = m_store.responses(m_fixture.agent);
        QCOMPARE(responses.size(), 8);
        QCOMPARE(responses.first().unit.role, QStringLiteral("analyzer"));
        QCOMPARE(responses.last().response.error, QStringLiteral("http: 500 the model crashed"));
        QVERIFY(!responses.last().response.tokensIn);
        QCOMPARE(*responses.first().response.tokensOut, qint64(50));
        QCOMPARE(m_store.responses(m_fixture.agent, responses.at(5).response.id).size(), 2);
        QVERIFY(m_store.responses(m_fixture.zeroShot).first().created.isValid());
    }

    void runListShowsEveryRun()
    {
        RunListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.reload(m_store);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.index(0, RunListModel::IdColumn).data().toString(), QStringLiteral("#%1").arg(m_fixture.agent));
        QCOMPARE(model.index(0, RunListModel::RegimeColumn).data().toString(), QStringLiteral("agent"));
        QCOMPARE(model.index(0, RunListModel::StatusColumn).data().toString(), QStringLiteral("finished"));
        QCOMPARE(model.index(0, RunListModel::TasksColumn).data().toString(), QStringLiteral("3"));
        QCOMPARE(model.index(0, RunListModel::CorrectColumn).data().toString(), QStringLiteral("66.7 %"));
        QCOMPARE(model.index(1, RunListModel::CorrectColumn).data().toString(), QStringLiteral("33.3 %"));
        QCOMPARE(model.index(2, RunListModel::StatusColumn).data().toString(), QStringLiteral("cancelled"));
        QCOMPARE(model.index(1, RunListModel::CorrectColumn).data(RunListModel::SortRole).toDouble(), 100.0 / 3);
        QVERIFY(model.flags(model.index(0, RunListModel::IdColumn)) & Qt::ItemIsUserCheckable);
        QVERIFY(!(model.flags(model.index(0, RunListModel::NameColumn)) & Qt::ItemIsUserCheckable));
    }

    void checkMarksSurviveAReload()
    {
        RunListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.reload(m_store);
        QSignalSpy checked(&model, &RunListModel::checkedRunsChanged);
        QVERIFY(model.setData(model.index(2, RunListModel::IdColumn), Qt::Checked, Qt::CheckStateRole));
        QVERIFY(model.setData(model.index(0, RunListModel::IdColumn), Qt::Checked, Qt::CheckStateRole));
        QCOMPARE(checked.size(), 2);
        QCOMPARE(model.checkedRunIds(), (QList<qint64>{m_fixture.agent, m_fixture.ablated}));
        QCOMPARE(model.index(0, RunListModel::IdColumn).data(Qt::CheckStateRole).toInt(), int(Qt::Checked));

        // A new run in the store: one row inserted at the end, no reset, checks kept.
        RunStore other;
        QVERIFY(other.open(m_store.path()));
        const qint64 fresh = addRun(other, QStringLiteral("iterative"), {}, RunStatus::Running);
        QVERIFY(fresh > 0);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.reload(m_store);
        QCOMPARE(reset.size(), 0);
        QCOMPARE(inserted.size(), 1);
        QCOMPARE(inserted.first().at(1).toInt(), 3);
        QCOMPARE(model.rowCount(), 4);
        QCOMPARE(model.checkedRunIds(), (QList<qint64>{m_fixture.agent, m_fixture.ablated}));
        // Its three tasks count from the start, as in the report: none is correct yet.
        QCOMPARE(model.index(3, RunListModel::TasksColumn).data().toString(), QStringLiteral("3"));
        QCOMPARE(model.index(3, RunListModel::CorrectColumn).data().toString(), QStringLiteral("0.0 %"));

        // The new run gets an evaluation: its row changes in place.
        FixtureUnit unit;
        unit.task = QStringLiteral("L1/1");
        unit.status = QStringLiteral("correct");
        QVERIFY(addUnit(other, fresh, unit));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.reload(m_store);
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed.first().at(0).toModelIndex().row(), 3);
        QCOMPARE(model.index(3, RunListModel::CorrectColumn).data().toString(), QStringLiteral("33.3 %"));

        model.setAllChecked(true);
        QCOMPARE(model.checkedRunIds().size(), 4);
        model.setAllChecked(false);
        QVERIFY(model.checkedRunIds().isEmpty());
    }

    void treeShowsTasksTurnsAndSamples()
    {
        RunTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.load(m_store, m_fixture.agent);
        QCOMPARE(model.taskCount(), 3);
        QCOMPARE(model.unitCount(), 8);

        const QModelIndex l11 = model.indexOfTask(QStringLiteral("L1/1"));
        QVERIFY(l11.isValid());
        QCOMPARE(l11.row(), 0);
        QCOMPARE(cell(model, l11, RunTreeModel::StatusColumn), QStringLiteral("correct"));
        QCOMPARE(cell(model, l11, RunTreeModel::SpeedupColumn), QStringLiteral("1.50×"));
        QCOMPARE(cell(model, l11, RunTreeModel::TokensColumn), QStringLiteral("300 / 150")); // three responses
        QCOMPARE(cell(model, l11, RunTreeModel::LatencyColumn), QStringLiteral("6.0 s"));
        QCOMPARE(model.rowCount(l11), 1); // one turn
        const QModelIndex turn = model.index(0, 0, l11);
        QCOMPARE(turn.data().toString(), QStringLiteral("Turn 1"));
        QCOMPARE(model.rowCount(turn), 3);
        // The analyzer's notes first, then the samples in order.
        QCOMPARE(model.index(0, RunTreeModel::RoleColumn, turn).data().toString(), QStringLiteral("analyzer"));
        QCOMPARE(model.index(0, RunTreeModel::StatusColumn, turn).data().toString(), QStringLiteral("answered"));
        QCOMPARE(model.index(1, RunTreeModel::ItemColumn, turn).data().toString(), QStringLiteral("Sample 0"));
        QCOMPARE(model.index(1, RunTreeModel::StatusColumn, turn).data().toString(), QStringLiteral("incorrect"));
        QCOMPARE(model.index(1, RunTreeModel::MaxAbsDiffColumn, turn).data().toString(), QStringLiteral("0.5"));
        QCOMPARE(model.index(2, RunTreeModel::StatusColumn, turn).data().toString(), QStringLiteral("correct"));
        QCOMPARE(model.index(2, RunTreeModel::SpeedupColumn, turn).data().toString(), QStringLiteral("1.50×"));
        QCOMPARE(model.index(2, 0, turn).data(RunTreeModel::TextRole).toString(),
                 QStringLiteral("L1/1 turn 1 generator sample 1"));

        // L1/2: turn 2 made it correct (0.8×), which beats turn 1's faster incorrect kernel.
        const QModelIndex l12 = model.indexOfTask(QStringLiteral("L1/2"));
        QCOMPARE(cell(model, l12, RunTreeModel::StatusColumn), QStringLiteral("correct"));
        QCOMPARE(cell(model, l12, RunTreeModel::SpeedupColumn), QStringLiteral("0.80×"));
        QCOMPARE(model.rowCount(l12), 2);
        const QModelIndex turn2 = model.index(1, 0, l12);
        QCOMPARE(model.index(0, RunTreeModel::RoleColumn, turn2).data().toString(), QStringLiteral("triager"));

        // L2/1: a compile error with its log, and a failed request.
        const QModelIndex l21 = model.indexOfTask(QStringLiteral("L2/1"));
        QCOMPARE(cell(model, l21, RunTreeModel::StatusColumn), QStringLiteral("compile_error"));
        const QModelIndex compileError =
            model.indexOf(UnitKey{QStringLiteral("L2/1"), 1, 0, QStringLiteral("generator")});
        QCOMPARE(compileError.data(RunTreeModel::CompileLogRole).toString(),
                 QStringLiteral("kernel.cu(3): error: fixture"));
        const QModelIndex failed = model.indexOf(UnitKey{QStringLiteral("L2/1"), 1, 1, QStringLiteral("generator")});
        QCOMPARE(model.index(failed.row(), RunTreeModel::StatusColumn, failed.parent()).data().toString(),
                 QStringLiteral("request failed"));
        QCOMPARE(failed.data(RunTreeModel::MessageRole).toString(), QStringLiteral("http: 500 the model crashed"));
        QCOMPARE(model.unitKey(failed)->sample, 1);
        QVERIFY(!model.unitKey(l21));
    }

    void aReusedEvaluationSaysWhose()
    {
        // A candidate stored with an identical answer's evaluation (evaluate identical once): the
        // status tooltip names the candidate measured.
        RunStore store;
        QVERIFY(store.open(m_dir.filePath(QStringLiteral("reused.db"))));
        const qint64 run = addRun(store, QStringLiteral("zero-shot"));
        FixtureUnit first;
        first.task = QStringLiteral("L1/1");
        first.status = QStringLiteral("incorrect");
        QVERIFY(addUnit(store, run, first));
        const qint64 measured = store.evaluations(run).first().candidateId;
        PromptRecord p{0,        run, QStringLiteral("L1/1"), 1, 1, QStringLiteral("generator"), QStringLiteral("p"),
                       QString()};
        ResponseRecord r;
        r.promptId = store.addPrompt(p).value_or(0);
        r.text = first.text;
        CandidateRecord c;
        c.responseId = store.addResponse(r).value_or(0);
        c.task = QStringLiteral("L1/1");
        c.turn = 1;
        c.sample = 1;
        const auto copy = store.addCandidate(c);
        QVERIFY(copy);
        QJsonObject reused = evaluationResult(first);
        reused.insert(QLatin1String(kReusedFromCandidateKey), double(measured));
        QVERIFY(store.addEvaluation(*copy, reused));
        RunTreeModel model;
        model.load(store, run);
        const QModelIndex a = model.indexOf(UnitKey{QStringLiteral("L1/1"), 1, 0, QStringLiteral("generator")});
        const QModelIndex b = model.indexOf(UnitKey{QStringLiteral("L1/1"), 1, 1, QStringLiteral("generator")});
        const auto tip = [&](const QModelIndex& i) {
            return model.index(i.row(), RunTreeModel::StatusColumn, i.parent()).data(Qt::ToolTipRole).toString();
        };
        QCOMPARE(tip(a), QStringLiteral("fixture: incorrect"));
        QVERIFY2(
            tip(b).startsWith(QStringLiteral("fixture: incorrect\n\nThe same answer as candidate %1").arg(measured)),
            qPrintable(tip(b)));
    }

    void liveAppendsInsertRowsAndKeepTheSelection()
    {
        RunTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setLive(true);
        model.load(m_store, m_fixture.zeroShot);
        QItemSelectionModel selection(&model);
        const UnitKey selected{QStringLiteral("L1/2"), 1, 0, QStringLiteral("generator")};
        selection.setCurrentIndex(model.indexOf(selected),
                                  QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);

        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);

        // A request starts for a task the tree has not seen: task, turn and unit rows appear.
        const UnitKey fresh{QStringLiteral("L1/10"), 1, 0, QStringLiteral("generator")};
        model.setGenerating(fresh, true);
        QCOMPARE(inserted.size(), 3);
        QCOMPARE(model.indexOfTask(QStringLiteral("L1/10")).row(), 2); // after L1/2, before L2/1
        QModelIndex freshIndex = model.indexOf(fresh, RunTreeModel::StatusColumn);
        QCOMPARE(freshIndex.data().toString(), QStringLiteral("generating…"));
        model.appendStreamedText(fresh, QStringLiteral("```cu"));
        model.appendStreamedText(fresh, QStringLiteral("da\n"));
        QCOMPARE(model.indexOf(fresh).data(RunTreeModel::TextRole).toString(), QStringLiteral("```cuda\n"));

        // The stored answer replaces the streamed text; then the evaluation arrives.
        UnitResponse response;
        response.unit = fresh;
        response.response.id = 1000;
        response.response.text = QStringLiteral("the whole answer");
        response.response.tokensIn = 10;
        response.response.tokensOut = 20;
        model.appendResponse(response);
        QCOMPARE(model.indexOf(fresh, RunTreeModel::StatusColumn).data().toString(), QStringLiteral("evaluating…"));
        QCOMPARE(model.indexOf(fresh).data(RunTreeModel::TextRole).toString(), QStringLiteral("the whole answer"));
        EvaluationRecord evaluation;
        evaluation.id = 1000;
        evaluation.task = fresh.task;
        evaluation.turn = 1;
        evaluation.sample = 0;
        evaluation.role = fresh.role;
        evaluation.status = QStringLiteral("correct");
        evaluation.speedup = 3.25;
        evaluation.result =
            QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")}, {QStringLiteral("speedup"), 3.25}};
        model.appendEvaluation(evaluation);
        QCOMPARE(model.indexOf(fresh, RunTreeModel::StatusColumn).data().toString(), QStringLiteral("correct"));
        QCOMPARE(cell(model, model.indexOfTask(fresh.task), RunTreeModel::SpeedupColumn), QStringLiteral("3.25×"));

        // A second sample and a second turn of an existing task.
        evaluation.id = 1001;
        evaluation.task = QStringLiteral("L1/2");
        evaluation.turn = 2;
        evaluation.status = QStringLiteral("runtime_error");
        evaluation.speedup.reset();
        evaluation.result = QJsonObject{{QStringLiteral("status"), QStringLiteral("runtime_error")}};
        model.appendEvaluation(evaluation);
        QCOMPARE(model.rowCount(model.indexOfTask(QStringLiteral("L1/2"))), 2);

        // A live unit that turned out to be another one goes away with its empty turn and task.
        const UnitKey wrong{QStringLiteral("L3/1"), 1, 0, QStringLiteral("analyzer")};
        model.setGenerating(wrong, true);
        QVERIFY(model.indexOfTask(QStringLiteral("L3/1")).isValid());
        model.setGenerating(wrong, false);
        model.removeLiveOnly(wrong);
        QVERIFY(!model.indexOfTask(QStringLiteral("L3/1")).isValid());
        model.removeLiveOnly(fresh); // has stored rows: stays
        QVERIFY(model.indexOf(fresh).isValid());

        QCOMPARE(reset.size(), 0);
        QVERIFY(selection.currentIndex().isValid());
        QCOMPARE(*model.unitKey(selection.currentIndex()), selected);
        QCOMPARE(selection.selectedRows().size(), 1);

        // Without live mode an answer that was never evaluated says so.
        model.setLive(false);
        const UnitKey unevaluated{QStringLiteral("L1/1"), 1, 3, QStringLiteral("generator")};
        response.unit = unevaluated;
        response.response.id = 1002;
        model.appendResponse(response);
        QCOMPARE(model.indexOf(unevaluated, RunTreeModel::StatusColumn).data().toString(),
                 QStringLiteral("not evaluated"));
    }
};

QTEST_MAIN(TestRunModels)
#include "tst_runmodels.moc"
