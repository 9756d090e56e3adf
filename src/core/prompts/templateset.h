#pragma once
// Prompt template sets. A set is a directory laid out like prompts/ (docs/prompts.md): regime
// folders with one `<role>.mustache` each and `partials/` with the `{{> name}}` files; which
// regime has which roles is core/config/regime.cpp's. PromptRenderer renders any set given its
// directory, and `kwb run --prompts DIR` runs one, so a set is complete: "save as" copies every
// file of the source set, then applies the edits.
//
// The shipped set (prompts/ of the source tree or share/kernel-workbench/prompts) is read-only:
// the study's runs record its wording. User sets live in
// QStandardPaths::AppDataLocation/prompt-sets/NAME.

#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {

class TemplateSet
{
public:
    TemplateSet() = default;
    /// A set in `dir`, named after its folder unless `name` is given.
    explicit TemplateSet(const QString& dir, bool readOnly = false, const QString& name = QString());

    /// The shipped set, read-only, named "shipped".
    static TemplateSet shipped(const QString& promptsDir);
    /// AppDataLocation/prompt-sets (not created).
    static QString userSetsRoot();
    /// The sets under root (one per folder), sorted by name.
    static QList<TemplateSet> userSets(const QString& root = userSetsRoot());
    /// Letters, digits, '.', '_', '-' and spaces, not starting with '.', at most 64 characters.
    static bool isValidName(const QString& name, QString* why = nullptr);

    QString name() const { return m_name; }
    QString dir() const { return m_dir; }
    bool isReadOnly() const { return m_readOnly; }
    bool exists() const;

    /// Every template, relative paths with '/' ("agent/generator.mustache",
    /// "partials/task.mustache"), sorted: role templates first, then partials.
    QStringList templates() const;
    QStringList roleTemplates() const;
    QStringList partials() const;
    bool contains(const QString& templatePath) const;
    /// Absolute path of a template of this set (it need not exist). Empty for a path that leaves the set.
    QString filePath(const QString& templatePath) const;

    /// Checks every template's structure (PromptRenderer::check: balanced tags, existing
    /// partials, no partial cycle, bounded nesting): one "file:line: what" per broken template,
    /// empty when all are sound. Run when a set is loaded, before it renders anything.
    QStringList check() const;

    /// The template's text (UTF-8).
    std::optional<QString> load(const QString& templatePath, QString* error = nullptr) const;
    /// Writes the template atomically (QSaveFile), creating its folder. Refused for a read-only set,
    /// a path that leaves the set or does not end in ".mustache".
    bool save(const QString& templatePath, const QString& text, QString* error = nullptr) const;

    /// Copies every file of `source` into root/name, then writes `edits` (template path -> text)
    /// over the copies. The new set appears whole or not at all: it is assembled in a hidden
    /// folder beside the target and renamed into place. Refused when the name is invalid or taken.
    static std::optional<TemplateSet> saveAs(const TemplateSet& source, const QString& name,
                                             const QMap<QString, QString>& edits = {},
                                             const QString& root = userSetsRoot(), QString* error = nullptr);

    struct Difference
    {
        enum Kind { Modified, Added, Removed };
        QString templatePath;
        Kind kind = Modified;

        friend bool operator==(const Difference& a, const Difference& b)
        {
            return a.templatePath == b.templatePath && a.kind == b.kind;
        }
    };
    /// The templates that differ from `base` (usually the shipped set), sorted by path: Modified
    /// (text differs), Added (only here), Removed (only in base).
    QList<Difference> compare(const TemplateSet& base) const;

private:
    QString m_dir;
    QString m_name;
    bool m_readOnly = false;
};

} // namespace kwb
