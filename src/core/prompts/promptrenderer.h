// Prompt templates (prompts/, docs/prompts.md): Mustache files rendered with the packaged kainjow
// library, checked first by our own walk of their tags, because the library renders a missing
// name or a missing partial as nothing, and a prompt with a silent hole is a wrong experiment.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

namespace kwb {

struct ProfileResult;

/// Where buildContext()'s feedback object carries the previous answer: the run adds it to the
/// `evaluate` response (it is the client's key, not the worker's).
inline const QString kFeedbackAnswerKey = QStringLiteral("answer");

class PromptRenderer
{
public:
    struct RenderResult
    {
        bool ok = false;
        QString text;     ///< the rendered prompt (empty on error)
        QString error;    ///< "file:line: what", for people and logs
        QString file;     ///< the template or partial the error is in, relative to the prompts dir
        int line = 0;     ///< 1-based line in that file, 0 when the error has no line
        QString variable; ///< the tag's name (variable, section or partial), when there is one
    };

    /// promptsDir holds the regime folders and partials/ (`{{> name}}` reads partials/name.mustache).
    explicit PromptRenderer(QString promptsDir);

    QString promptsDir() const { return m_dir; }

    /// Strict (the default): a tag that would render and names nothing in the context is an error.
    /// Otherwise it renders empty, as Mustache does. Unbalanced sections and missing partials are
    /// errors either way.
    void setStrict(bool strict) { m_strict = strict; }
    bool strict() const { return m_strict; }

    /// templatePath is relative to the prompts dir ("agent/generator.mustache") or absolute.
    /// Nothing is HTML-escaped: `{{x}}` and `{{{x}}}` both insert x as it is.
    RenderResult render(const QString& templatePath, const QJsonObject& context) const;

    /// The structure alone, for any context: the tags balance, every partial exists, partials
    /// include no cycle ("partial cycle: a > b > a") and sections and partials nest within bounds.
    /// render() checks this first; a template set checks it for every template when loaded.
    RenderResult check(const QString& templatePath) const;

    /// Every template under the prompts dir, relative paths, sorted; partials/ left out.
    QStringList templates() const;

    /// The context of docs/prompts.md from the worker's responses (docs/protocol.md): a task as
    /// `tasks` lists it, `analyze`, `profile` and `device` responses (any may be empty) and, for a
    /// retry, the `evaluate` response of the previous answer with the answer itself under
    /// kFeedbackAnswerKey, and the run's protocol profile's settings (for `tolerance`). Every documented name is
    /// present: what is unknown is false (sections skip it).
    static QJsonObject buildContext(const QJsonObject& task, const QJsonObject& analyze, const QJsonObject& profile,
                                    const QJsonObject& device, const QJsonObject& feedback = {},
                                    const QJsonObject& protocolProfile = {});
    /// "atol = rtol = 0.0001, profile kernelbench-fp32" from a profile's settings as `hello`
    /// lists them (name, atol, rtol); empty when they are not known.
    static QString toleranceText(const QJsonObject& protocolProfile);

    /// One operator of a `profile` response with its call sites summed (`top_ops`).
    struct OperatorTime
    {
        QString op;        ///< "aten::conv2d"; "(no op)" for kernels launched outside any
        double timeNs = 0; ///< CUDA kernel time per reference call, all its call sites
        double share = 0;  ///< of the profile's total, 0..1
        int kernels = 0;   ///< kernel launches per reference call
        int calls = 0;     ///< call sites in the reference
    };
    /// CUDA time per operator name, most first (equal times by name), as torch.profiler's
    /// key_averages() sums it; the worker reports one row per call site.
    static QList<OperatorTime> operatorTimes(const ProfileResult& profile);

    /// The roofline rule the profiling-guided and competence-matched prompts state.
    static QString rooflineRule();

private:
    QString m_dir;
    bool m_strict = true;
};

} // namespace kwb
