// core/templateset: the shipped set is read-only and lists every template; "save as" copies a
// whole set (every file, templates or not) with edits applied, all at once; save is atomic and stays inside
// the set; compare names what differs from the shipped set; a saved set renders with
// PromptRenderer like prompts/ does.

#include "core/prompts/promptrenderer.h"
#include "core/prompts/templateset.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;

namespace {

QString shippedDir()
{
    return QStringLiteral(KWB_PROMPTS_DIR);
}

QString readText(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

using Diff = TemplateSet::Difference;

/// Every file under dir, relative, sorted.
QStringList allFiles(const QString& dir)
{
    QStringList out;
    QDirIterator it(dir, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext())
        out << QDir(dir).relativeFilePath(it.next());
    out.sort();
    return out;
}

} // namespace

class TestTemplateSet : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void shippedSetListsItsTemplates()
    {
        const TemplateSet shipped = TemplateSet::shipped(shippedDir());
        QVERIFY(shipped.exists());
        QVERIFY(shipped.isReadOnly());
        QCOMPARE(shipped.name(), QStringLiteral("shipped"));
        // The manifest's 12 role templates (docs/prompts.md) and its 6 partials.
        QCOMPARE(shipped.roleTemplates(), PromptRenderer(shippedDir()).templates());
        QCOMPARE(shipped.roleTemplates().size(), 12);
        QCOMPARE(shipped.partials().size(), 6);
        QCOMPARE(shipped.templates().size(), 18);
        QCOMPARE(shipped.templates().first(), QStringLiteral("agent/analyzer.mustache"));
        QCOMPARE(shipped.templates().last(), QStringLiteral("partials/top_ops.mustache"));
        QVERIFY(shipped.contains(QStringLiteral("partials/reference.mustache")));
        QVERIFY(!shipped.contains(QStringLiteral("agent/nothing.mustache")));
        QVERIFY(
            shipped.load(QStringLiteral("zero-shot/generator.mustache"))->contains(QLatin1String("{{> reference}}")));
        QVERIFY(shipped.compare(shipped).isEmpty());
    }

    void shippedSetRefusesToSave()
    {
        const TemplateSet shipped = TemplateSet::shipped(shippedDir());
        const QString before = readText(shipped.filePath(QStringLiteral("zero-shot/generator.mustache")));
        QString error;
        QVERIFY(!shipped.save(QStringLiteral("zero-shot/generator.mustache"), QStringLiteral("x"), &error));
        QVERIFY2(error.contains(QLatin1String("read-only")), qPrintable(error));
        QCOMPARE(readText(shipped.filePath(QStringLiteral("zero-shot/generator.mustache"))), before);
    }

    void userSetsRootIsAppData()
    {
        QVERIFY(TemplateSet::userSetsRoot().endsWith(QLatin1String("/prompt-sets")));
        QVERIFY(
            TemplateSet::userSetsRoot().startsWith(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)));
    }

    void saveAsCopiesTheWholeSetWithEdits()
    {
        QTemporaryDir root;
        QVERIFY(root.isValid());
        const TemplateSet shipped = TemplateSet::shipped(shippedDir());
        const QString edited = QStringLiteral("Edited {{task_id}}\n");
        QString error;
        const auto made =
            TemplateSet::saveAs(shipped, QStringLiteral("trial one"),
                                {{QStringLiteral("zero-shot/generator.mustache"), edited}}, root.path(), &error);
        QVERIFY2(made, qPrintable(error));
        QCOMPARE(made->dir(), QDir(root.path()).filePath(QStringLiteral("trial one")));
        QCOMPARE(made->name(), QStringLiteral("trial one"));
        QVERIFY(!made->isReadOnly());
        QCOMPARE(made->templates(), shipped.templates());
        QCOMPARE(allFiles(made->dir()), allFiles(shipped.dir()));
        QCOMPARE(readText(made->filePath(QStringLiteral("zero-shot/generator.mustache"))), edited);
        QCOMPARE(readText(made->filePath(QStringLiteral("agent/generator.mustache"))),
                 readText(shipped.filePath(QStringLiteral("agent/generator.mustache"))));
        QCOMPARE(made->compare(shipped),
                 (QList<Diff>{{QStringLiteral("zero-shot/generator.mustache"), Diff::Modified}}));
        // Nothing but the set is left in the root (no staging folder).
        QCOMPARE(QDir(root.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden),
                 QStringList{QStringLiteral("trial one")});
        QCOMPARE(TemplateSet::userSets(root.path()).size(), 1);
        QCOMPARE(TemplateSet::userSets(root.path()).first().dir(), made->dir());

        // A file that is no template (a user's notes) is part of the set too.
        QFile notes(QDir(made->dir()).filePath(QStringLiteral("NOTES.txt")));
        QVERIFY(notes.open(QIODevice::WriteOnly));
        notes.write("why this set exists\n");
        notes.close();
        const auto again = TemplateSet::saveAs(*made, QStringLiteral("trial two"), {}, root.path(), &error);
        QVERIFY2(again, qPrintable(error));
        QCOMPARE(readText(QDir(again->dir()).filePath(QStringLiteral("NOTES.txt"))),
                 QStringLiteral("why this set exists\n"));
        QCOMPARE(allFiles(again->dir()), allFiles(made->dir()));
    }

    void saveAsRefusesBadNamesAndTakenOnes()
    {
        QTemporaryDir root;
        const TemplateSet shipped = TemplateSet::shipped(shippedDir());
        QString error;
        for (const QString& bad : {QString(), QStringLiteral(".hidden"), QStringLiteral("a/b"), QStringLiteral("../up"),
                                   QStringLiteral(" padded"), QString(65, QLatin1Char('x'))}) {
            QVERIFY2(!TemplateSet::saveAs(shipped, bad, {}, root.path(), &error), qPrintable(bad));
            QVERIFY(!error.isEmpty());
        }
        QVERIFY(TemplateSet::saveAs(shipped, QStringLiteral("taken"), {}, root.path(), &error));
        QVERIFY(!TemplateSet::saveAs(shipped, QStringLiteral("taken"), {}, root.path(), &error));
        QVERIFY2(error.contains(QLatin1String("already exists")), qPrintable(error));
        // An edit outside the set is refused before anything is written.
        QVERIFY(!TemplateSet::saveAs(shipped, QStringLiteral("escape"),
                                     {{QStringLiteral("../evil.mustache"), QString()}}, root.path(), &error));
        QVERIFY(!QFile::exists(QDir(root.path()).filePath(QStringLiteral("escape"))));
        QCOMPARE(QDir(root.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden),
                 QStringList{QStringLiteral("taken")});
    }

    void saveWritesInsideTheSetOnly()
    {
        QTemporaryDir root;
        const auto set =
            TemplateSet::saveAs(TemplateSet::shipped(shippedDir()), QStringLiteral("mine"), {}, root.path());
        QVERIFY(set);
        QString error;
        QVERIFY2(set->save(QStringLiteral("agent/triager.mustache"), QStringLiteral("Triage {{task_id}}\n"), &error),
                 qPrintable(error));
        QCOMPARE(*set->load(QStringLiteral("agent/triager.mustache")), QStringLiteral("Triage {{task_id}}\n"));
        for (const QString& bad : {QStringLiteral("../outside.mustache"), QStringLiteral("/tmp/abs.mustache"),
                                   QStringLiteral("agent/notes.txt"), QStringLiteral("agent/../../x.mustache")}) {
            QVERIFY2(!set->save(bad, QStringLiteral("x"), &error), qPrintable(bad));
            QVERIFY(set->filePath(bad).isEmpty());
        }
        QVERIFY(!QFile::exists(QDir(root.path()).filePath(QStringLiteral("outside.mustache"))));
        // A new regime folder is created on save.
        QVERIFY(set->save(QStringLiteral("mine/generator.mustache"), QStringLiteral("{{> task}}\n"), &error));
        QVERIFY(set->roleTemplates().contains(QStringLiteral("mine/generator.mustache")));
    }

    void compareNamesModifiedAddedRemoved()
    {
        QTemporaryDir root;
        const TemplateSet shipped = TemplateSet::shipped(shippedDir());
        const auto set = TemplateSet::saveAs(shipped, QStringLiteral("diffs"), {}, root.path());
        QVERIFY(set);
        QVERIFY(set->compare(shipped).isEmpty());
        QVERIFY(set->save(QStringLiteral("partials/reference.mustache"), QStringLiteral("## {{task_id}}\n")));
        QVERIFY(set->save(QStringLiteral("agent/extra.mustache"), QStringLiteral("extra\n")));
        QVERIFY(QFile::remove(set->filePath(QStringLiteral("pilot-v1/critic.mustache"))));
        QCOMPARE(set->compare(shipped), (QList<Diff>{{QStringLiteral("agent/extra.mustache"), Diff::Added},
                                                     {QStringLiteral("partials/reference.mustache"), Diff::Modified},
                                                     {QStringLiteral("pilot-v1/critic.mustache"), Diff::Removed}}));
    }

    void savedSetRendersLikeThePromptsDir()
    {
        QTemporaryDir root;
        const auto set = TemplateSet::saveAs(
            TemplateSet::shipped(shippedDir()), QStringLiteral("render"),
            {{QStringLiteral("partials/reference.mustache"), QStringLiteral("Custom heading for {{task_id}}\n")}},
            root.path());
        QVERIFY(set);
        const QJsonObject context = PromptRenderer::buildContext(
            QJsonObject{{QStringLiteral("id"), QStringLiteral("L1/1")}, {QStringLiteral("title"), QStringLiteral("t")}},
            {}, {}, {});
        const auto result = PromptRenderer(set->dir()).render(QStringLiteral("zero-shot/generator.mustache"), context);
        QVERIFY2(result.ok, qPrintable(result.error));
        QVERIFY(result.text.contains(QLatin1String("Custom heading for L1/1")));
        QVERIFY(!result.text.contains(QLatin1String("The reference implementation in PyTorch")));
    }
};

QTEST_GUILESS_MAIN(TestTemplateSet)
#include "tst_templateset.moc"
