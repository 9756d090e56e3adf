#include "core/prompts/templateset.h"

#include "core/prompts/promptrenderer.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>
#include <QSaveFile>
#include <QSet>
#include <QStandardPaths>

#include <algorithm>

namespace kwb {

namespace {

const QString kSuffix = QStringLiteral(".mustache");
const QString kPartialsPrefix = QStringLiteral("partials/");

void setError(QString* error, const QString& message)
{
    if (error)
        *error = message;
}

/// A template path relative to its set: '/'-separated, no "..", no leading '/', ends in .mustache.
bool isSafeTemplatePath(const QString& path)
{
    if (path.isEmpty() || QDir::isAbsolutePath(path) || !path.endsWith(kSuffix))
        return false;
    const QString clean = QDir::cleanPath(path);
    return clean == path && !clean.startsWith(QLatin1String("../")) && clean != QLatin1String("..");
}

bool readBytes(const QString& path, QByteArray* bytes)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return false;
    *bytes = f.readAll();
    return true;
}

bool writeAtomically(const QString& path, const QByteArray& bytes, QString* error)
{
    if (!QDir().mkpath(QFileInfo(path).absolutePath())) {
        setError(error, QStringLiteral("cannot create the folder of %1").arg(path));
        return false;
    }
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit()) {
        setError(error, QStringLiteral("cannot write %1: %2").arg(path, f.errorString()));
        return false;
    }
    return true;
}

} // namespace

TemplateSet::TemplateSet(const QString& dir, bool readOnly, const QString& name)
    : m_dir(QDir::cleanPath(QDir(dir).absolutePath()))
    , m_name(name.isEmpty() ? QFileInfo(m_dir).fileName() : name)
    , m_readOnly(readOnly)
{}

TemplateSet TemplateSet::shipped(const QString& promptsDir)
{
    return TemplateSet(promptsDir, true, QStringLiteral("shipped"));
}

QString TemplateSet::userSetsRoot()
{
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation))
        .filePath(QStringLiteral("prompt-sets"));
}

QList<TemplateSet> TemplateSet::userSets(const QString& root)
{
    QList<TemplateSet> out;
    const QDir dir(root);
    for (const QString& name : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name | QDir::IgnoreCase))
        out.append(TemplateSet(dir.filePath(name)));
    return out;
}

bool TemplateSet::isValidName(const QString& name, QString* why)
{
    if (name.trimmed().isEmpty()) {
        setError(why, QStringLiteral("the name is empty"));
        return false;
    }
    if (name.size() > 64) {
        setError(why, QStringLiteral("the name is longer than 64 characters"));
        return false;
    }
    if (name.startsWith(QLatin1Char('.')) || name != name.trimmed()) {
        setError(why, QStringLiteral("the name may not start with '.' or with or end in a space"));
        return false;
    }
    for (const QChar c : name) {
        if (!(c.isLetterOrNumber() || c == QLatin1Char('.') || c == QLatin1Char('_') || c == QLatin1Char('-') ||
              c == QLatin1Char(' '))) {
            setError(
                why,
                QStringLiteral("'%1' is not allowed in a set's name (letters, digits, '.', '_', '-', spaces)").arg(c));
            return false;
        }
    }
    return true;
}

bool TemplateSet::exists() const
{
    return !m_dir.isEmpty() && QFileInfo(m_dir).isDir();
}

QStringList TemplateSet::templates() const
{
    return roleTemplates() + partials();
}

QStringList TemplateSet::roleTemplates() const
{
    QStringList roles;
    if (!exists())
        return roles;
    const QDir dir(m_dir);
    QDirIterator it(m_dir, {QStringLiteral("*.mustache")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString rel = dir.relativeFilePath(it.next());
        if (!rel.startsWith(kPartialsPrefix))
            roles << rel;
    }
    roles.sort();
    return roles;
}

QStringList TemplateSet::partials() const
{
    QStringList out;
    const QDir dir(QDir(m_dir).filePath(QStringLiteral("partials")));
    if (!exists() || !dir.exists())
        return out;
    for (const QString& name : dir.entryList({QStringLiteral("*.mustache")}, QDir::Files, QDir::Name))
        out << kPartialsPrefix + name;
    return out;
}

bool TemplateSet::contains(const QString& templatePath) const
{
    const QString path = filePath(templatePath);
    return !path.isEmpty() && QFileInfo(path).isFile();
}

QString TemplateSet::filePath(const QString& templatePath) const
{
    if (!isSafeTemplatePath(templatePath))
        return {};
    return QDir(m_dir).filePath(templatePath);
}

QStringList TemplateSet::check() const
{
    QStringList problems;
    const PromptRenderer renderer(m_dir);
    for (const QString& templatePath : templates()) {
        const PromptRenderer::RenderResult r = renderer.check(templatePath);
        if (!r.ok)
            problems << r.error;
    }
    return problems;
}

std::optional<QString> TemplateSet::load(const QString& templatePath, QString* error) const
{
    const QString path = filePath(templatePath);
    if (path.isEmpty()) {
        setError(error, QStringLiteral("'%1' is not a template path of a set").arg(templatePath));
        return std::nullopt;
    }
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        setError(error, QStringLiteral("cannot read %1: %2").arg(path, f.errorString()));
        return std::nullopt;
    }
    return QString::fromUtf8(f.readAll());
}

bool TemplateSet::save(const QString& templatePath, const QString& text, QString* error) const
{
    if (m_readOnly) {
        setError(error, QStringLiteral("the %1 set is read-only: save it as a new set").arg(m_name));
        return false;
    }
    const QString path = filePath(templatePath);
    if (path.isEmpty()) {
        setError(error, QStringLiteral("'%1' is not a template path (relative, inside the set, ending in .mustache)")
                            .arg(templatePath));
        return false;
    }
    return writeAtomically(path, text.toUtf8(), error);
}

std::optional<TemplateSet> TemplateSet::saveAs(const TemplateSet& source, const QString& name,
                                               const QMap<QString, QString>& edits, const QString& root, QString* error)
{
    QString why;
    if (!isValidName(name, &why)) {
        setError(error, why);
        return std::nullopt;
    }
    if (!source.exists()) {
        setError(error, QStringLiteral("the set %1 does not exist (%2)").arg(source.name(), source.dir()));
        return std::nullopt;
    }
    for (auto it = edits.cbegin(); it != edits.cend(); ++it) {
        if (!isSafeTemplatePath(it.key())) {
            setError(error, QStringLiteral("'%1' is not a template path").arg(it.key()));
            return std::nullopt;
        }
    }
    const QDir rootDir(root);
    const QString target = rootDir.filePath(name);
    if (QFileInfo::exists(target)) {
        setError(error, QStringLiteral("a set named '%1' already exists").arg(name));
        return std::nullopt;
    }
    if (!QDir().mkpath(root)) {
        setError(error, QStringLiteral("cannot create %1").arg(root));
        return std::nullopt;
    }
    const QString staging = rootDir.filePath(QStringLiteral(".%1.partial-%2")
                                                 .arg(name)
                                                 .arg(QRandomGenerator::global()->generate(), 8, 16, QLatin1Char('0')));
    auto abandon = [&](const QString& message) -> std::optional<TemplateSet> {
        QDir(staging).removeRecursively();
        setError(error, message);
        return std::nullopt;
    };

    const QDir sourceDir(source.dir());
    QDirIterator it(source.dir(), QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString from = it.next();
        const QString rel = sourceDir.relativeFilePath(from);
        QByteArray bytes;
        if (!readBytes(from, &bytes))
            return abandon(QStringLiteral("cannot read %1").arg(from));
        QString writeError;
        if (!writeAtomically(QDir(staging).filePath(rel), bytes, &writeError))
            return abandon(writeError);
    }
    for (auto e = edits.cbegin(); e != edits.cend(); ++e) {
        QString writeError;
        if (!writeAtomically(QDir(staging).filePath(e.key()), e.value().toUtf8(), &writeError))
            return abandon(writeError);
    }
    if (!QDir().rename(staging, target))
        return abandon(QStringLiteral("cannot move the new set into place at %1").arg(target));
    return TemplateSet(target);
}

QList<TemplateSet::Difference> TemplateSet::compare(const TemplateSet& base) const
{
    const QStringList mine = templates();
    const QStringList theirs = base.templates();
    const QSet<QString> mineSet(mine.begin(), mine.end());
    const QSet<QString> theirSet(theirs.begin(), theirs.end());

    QList<Difference> out;
    for (const QString& path : mine) {
        if (!theirSet.contains(path)) {
            out.append({path, Difference::Added});
            continue;
        }
        QByteArray a, b;
        const bool readA = readBytes(filePath(path), &a);
        const bool readB = readBytes(base.filePath(path), &b);
        if (!readA || !readB || a != b)
            out.append({path, Difference::Modified});
    }
    for (const QString& path : theirs)
        if (!mineSet.contains(path))
            out.append({path, Difference::Removed});
    std::sort(out.begin(), out.end(),
              [](const Difference& x, const Difference& y) { return x.templatePath < y.templatePath; });
    return out;
}

} // namespace kwb
