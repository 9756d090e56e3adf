#include "app/runs/runtreemodel.h"

#include "app/runs/reporttables.h"
#include "core/config/regime.h"
#include "core/protocol/evaluationresult.h"
#include "core/protocol/evaluationstatus.h"
#include "core/run/selection.h"
#include "core/study/evaluationsummary.h"

#include <QBrush>
#include <QColor>
#include <QRegularExpression>

#include <algorithm>

namespace kwb::app {

/// The best evaluated unit under a node, and the sums.
struct RunTreeModel::Summary
{
    const RunTreeUnit* best = nullptr; ///< a unit of a child node (nodes do not move)
    int units = 0;
    int evaluated = 0;
    int generating = 0;
    int failed = 0;
    std::optional<qint64> tokensIn;
    std::optional<qint64> tokensOut;
    std::optional<qint64> latencyMs;
};

struct RunTreeModel::Node
{
    Kind kind = TaskKind;
    Node* parent = nullptr;
    QString task;
    int turn = 0;
    RunTreeUnit unit;
    Summary summary; ///< task and turn rows: summarize(), kept up to date by resummarizeAbove()
    std::vector<std::unique_ptr<Node>> children;
};

namespace {

/// Notes roles first, in the order a turn asks them, then the answer role's samples.
int roleRank(const QString& role)
{
    if (role == RegimeRole::Analyzer)
        return 0;
    if (role == RegimeRole::Researcher)
        return 1;
    if (role == RegimeRole::Triager || role == RegimeRole::Critic)
        return 2;
    return 3;
}

/// "L2/10" sorts after "L2/9".
std::pair<int, int> taskOrder(const QString& task)
{
    static const QRegularExpression pattern(QStringLiteral("^L(\\d+)/(\\d+)$"));
    const auto m = pattern.match(task);
    return m.hasMatch() ? std::pair{m.captured(1).toInt(), m.captured(2).toInt()} : std::pair{1 << 30, 0};
}

bool taskBefore(const QString& a, const QString& b)
{
    const auto oa = taskOrder(a), ob = taskOrder(b);
    return oa != ob ? oa < ob : a < b;
}

void addOptional(std::optional<qint64>& sum, const std::optional<qint64>& value)
{
    if (value)
        sum = sum.value_or(0) + *value;
}

QString tokensText(const std::optional<qint64>& in, const std::optional<qint64>& out)
{
    if (!in && !out)
        return QString();
    return QStringLiteral("%1 / %2").arg(countCell(in), countCell(out));
}

/// The status table's colour (core/protocol/evaluationstatus.h); none for what is not a status
/// ("request failed", a model request's failure, keeps the warning colour it had).
QColor statusColor(const QString& status)
{
    const EvaluationStatus known = evaluationStatusFromWire(status);
    if (known != EvaluationStatus::Unknown)
        return QColor::fromRgba(statusColour(known));
    if (status == QLatin1String("request failed"))
        return QColor::fromRgba(statusColour(EvaluationStatus::Timeout));
    return QColor();
}

} // namespace

RunTreeModel::RunTreeModel(QObject* parent)
    : QAbstractItemModel(parent)
    , m_root(std::make_unique<Node>())
{}

RunTreeModel::~RunTreeModel() = default;

void RunTreeModel::describeEvaluation(RunTreeUnit& u)
{
    // Decoded once per evaluation (EvaluationRecord::evaluation), not per paint.
    const EvaluationResult& e = u.evaluation;
    u.maxAbsDiffText = maxAbsDiffText(e);
    u.speedupInterval = e.timing.interval;
    if (u.maxAbsDiffText.isEmpty() && u.maxAbsDiff)
        u.maxAbsDiffText = QString::number(*u.maxAbsDiff, 'g', 3);
    u.notCounted = e.isCorrect() && !e.countsAsCorrect();
    u.outcome = CandidateOutcome::fromEvaluation(e, 1, u.sample);
    u.outcome.status = evaluationStatusFromWire(u.status);
    u.outcome.speedup = u.speedup;
}

bool RunTreeModel::isAnswerRole(const QString& role)
{
    return roleRank(role) == 3;
}

void RunTreeModel::clear()
{
    beginResetModel();
    m_root = std::make_unique<Node>();
    endResetModel();
}

void RunTreeModel::load(const RunStore& store, qint64 runId)
{
    beginResetModel();
    const std::optional<RunInfo> run = store.run(runId);
    m_config = run ? run->config : RunConfig();
    m_root = std::make_unique<Node>();
    const bool live = m_live;
    // Build without signals: the reset covers everything.
    const auto put = [this](const UnitKey& key) {
        Node* task = findTask(key.task);
        if (!task) {
            auto node = std::make_unique<Node>();
            node->kind = TaskKind;
            node->parent = m_root.get();
            node->task = key.task;
            auto& c = m_root->children;
            const auto at =
                std::find_if(c.begin(), c.end(), [&](const auto& n) { return taskBefore(key.task, n->task); });
            task = c.insert(at, std::move(node))->get();
        }
        Node* turn = findTurn(task, key.turn);
        if (!turn) {
            auto node = std::make_unique<Node>();
            node->kind = TurnKind;
            node->parent = task;
            node->task = key.task;
            node->turn = key.turn;
            auto& c = task->children;
            const auto at = std::find_if(c.begin(), c.end(), [&](const auto& n) { return key.turn < n->turn; });
            turn = c.insert(at, std::move(node))->get();
        }
        Node* unit = findUnit(turn, key.sample, key.role);
        if (!unit) {
            auto node = std::make_unique<Node>();
            node->kind = UnitKind;
            node->parent = turn;
            node->task = key.task;
            node->turn = key.turn;
            node->unit.sample = key.sample;
            node->unit.role = key.role;
            auto& c = turn->children;
            const auto rank = std::pair{roleRank(key.role), key.sample};
            const auto at = std::find_if(c.begin(), c.end(), [&](const auto& n) {
                return rank < std::pair{roleRank(n->unit.role), n->unit.sample};
            });
            unit = c.insert(at, std::move(node))->get();
        }
        return unit;
    };
    if (store.isOpen()) {
        for (const UnitResponse& r : store.responses(runId)) {
            RunTreeUnit& u = put(r.unit)->unit;
            u.responseId = r.response.id;
            u.text = r.response.text;
            u.error = r.response.error;
            u.tokensIn = r.response.tokensIn;
            u.tokensOut = r.response.tokensOut;
            u.latencyMs = r.response.latencyMs;
        }
        for (const EvaluationRecord& e : store.evaluations(runId)) {
            RunTreeUnit& u = put(UnitKey{e.task, e.turn, e.sample, e.role})->unit;
            u.evaluationId = e.id;
            u.status = e.status;
            u.speedup = e.speedup;
            u.maxAbsDiff = e.maxAbsDiff;
            u.evaluation = e.evaluation();
            describeEvaluation(u);
        }
    }
    for (const auto& task : m_root->children) {
        for (const auto& turn : task->children)
            turn->summary = summarize(turn.get());
        task->summary = summarize(task.get());
    }
    m_live = live;
    endResetModel();
}

void RunTreeModel::setLive(bool live)
{
    if (m_live == live)
        return;
    m_live = live;
    if (!m_root->children.empty())
        Q_EMIT dataChanged(index(0, 0), index(int(m_root->children.size()) - 1, ColumnCount - 1));
    // Unit rows' texts change too; they are refreshed as the view asks for them again.
    for (const auto& task : m_root->children)
        for (const auto& turn : task->children)
            if (!turn->children.empty())
                Q_EMIT dataChanged(indexOfNode(turn->children.front().get()),
                                   indexOfNode(turn->children.back().get(), ColumnCount - 1));
}

RunTreeModel::Node* RunTreeModel::findTask(const QString& task) const
{
    for (const auto& node : m_root->children)
        if (node->task == task)
            return node.get();
    return nullptr;
}

RunTreeModel::Node* RunTreeModel::findTurn(const Node* task, int turn) const
{
    for (const auto& node : task->children)
        if (node->turn == turn)
            return node.get();
    return nullptr;
}

RunTreeModel::Node* RunTreeModel::findUnit(const Node* turn, int sample, const QString& role) const
{
    for (const auto& node : turn->children)
        if (node->unit.sample == sample && node->unit.role == role)
            return node.get();
    return nullptr;
}

RunTreeModel::Node* RunTreeModel::ensureUnit(const UnitKey& key)
{
    Node* task = findTask(key.task);
    if (!task) {
        auto& c = m_root->children;
        const auto at = std::find_if(c.begin(), c.end(), [&](const auto& n) { return taskBefore(key.task, n->task); });
        const int row = int(at - c.begin());
        auto node = std::make_unique<Node>();
        node->kind = TaskKind;
        node->parent = m_root.get();
        node->task = key.task;
        beginInsertRows(QModelIndex(), row, row);
        task = c.insert(c.begin() + row, std::move(node))->get();
        endInsertRows();
    }
    Node* turn = findTurn(task, key.turn);
    if (!turn) {
        auto& c = task->children;
        const auto at = std::find_if(c.begin(), c.end(), [&](const auto& n) { return key.turn < n->turn; });
        const int row = int(at - c.begin());
        auto node = std::make_unique<Node>();
        node->kind = TurnKind;
        node->parent = task;
        node->task = key.task;
        node->turn = key.turn;
        beginInsertRows(indexOfNode(task), row, row);
        turn = c.insert(c.begin() + row, std::move(node))->get();
        endInsertRows();
    }
    Node* unit = findUnit(turn, key.sample, key.role);
    if (!unit) {
        auto& c = turn->children;
        const auto rank = std::pair{roleRank(key.role), key.sample};
        const auto at = std::find_if(c.begin(), c.end(), [&](const auto& n) {
            return rank < std::pair{roleRank(n->unit.role), n->unit.sample};
        });
        const int row = int(at - c.begin());
        auto node = std::make_unique<Node>();
        node->kind = UnitKind;
        node->parent = turn;
        node->task = key.task;
        node->turn = key.turn;
        node->unit.sample = key.sample;
        node->unit.role = key.role;
        beginInsertRows(indexOfNode(turn), row, row);
        unit = c.insert(c.begin() + row, std::move(node))->get();
        endInsertRows();
        // The turn and task count one unit more.
        resummarizeAbove(unit);
        for (Node* n = turn; n != m_root.get(); n = n->parent)
            Q_EMIT dataChanged(indexOfNode(n, 0), indexOfNode(n, ColumnCount - 1));
    }
    return unit;
}

void RunTreeModel::resummarizeAbove(Node* node)
{
    for (Node* n = node->parent; n && n != m_root.get(); n = n->parent)
        n->summary = summarize(n);
}

void RunTreeModel::unitChanged(Node* unit)
{
    // The unit's row, and its turn's and task's rows, whose summaries include it.
    resummarizeAbove(unit);
    for (Node* node = unit; node && node != m_root.get(); node = node->parent)
        Q_EMIT dataChanged(indexOfNode(node, 0), indexOfNode(node, ColumnCount - 1));
}

void RunTreeModel::appendResponse(const UnitResponse& response)
{
    Node* node = ensureUnit(response.unit);
    RunTreeUnit& u = node->unit;
    if (response.response.id != 0 && response.response.id < u.responseId)
        return; // an older answer of the unit than the one shown
    u.responseId = response.response.id;
    u.text = response.response.text;
    u.error = response.response.error;
    u.tokensIn = response.response.tokensIn;
    u.tokensOut = response.response.tokensOut;
    u.latencyMs = response.response.latencyMs;
    u.generating = false;
    unitChanged(node);
}

void RunTreeModel::appendEvaluation(const EvaluationRecord& evaluation)
{
    Node* node = ensureUnit(UnitKey{evaluation.task, evaluation.turn, evaluation.sample, evaluation.role});
    RunTreeUnit& u = node->unit;
    if (evaluation.id != 0 && evaluation.id < u.evaluationId)
        return;
    u.evaluationId = evaluation.id;
    u.status = evaluation.status;
    u.speedup = evaluation.speedup;
    u.maxAbsDiff = evaluation.maxAbsDiff;
    u.evaluation = evaluation.evaluation();
    describeEvaluation(u);
    u.generating = false;
    unitChanged(node);
}

void RunTreeModel::setGenerating(const UnitKey& key, bool generating)
{
    Node* node = generating ? ensureUnit(key) : nullptr;
    if (!node) {
        Node* task = findTask(key.task);
        Node* turn = task ? findTurn(task, key.turn) : nullptr;
        node = turn ? findUnit(turn, key.sample, key.role) : nullptr;
        if (!node)
            return;
    }
    if (node->unit.generating == generating)
        return;
    node->unit.generating = generating;
    if (generating && node->unit.responseId == 0)
        node->unit.text.clear();
    unitChanged(node);
}

void RunTreeModel::appendStreamedText(const UnitKey& key, const QString& chunk)
{
    Node* node = ensureUnit(key);
    node->unit.text += chunk;
}

void RunTreeModel::removeLiveOnly(const UnitKey& key)
{
    Node* task = findTask(key.task);
    Node* turn = task ? findTurn(task, key.turn) : nullptr;
    Node* unit = turn ? findUnit(turn, key.sample, key.role) : nullptr;
    if (!unit || unit->unit.responseId != 0 || unit->unit.evaluationId != 0)
        return;
    // Remove the highest node that would be left empty.
    Node* victim = unit;
    while (victim->parent != m_root.get() && victim->parent->children.size() == 1)
        victim = victim->parent;
    Node* parent = victim->parent;
    const int row = rowOf(victim);
    beginRemoveRows(indexOfNode(parent), row, row);
    parent->children.erase(parent->children.begin() + row);
    endRemoveRows();
    if (parent != m_root.get()) {
        parent->summary = summarize(parent);
        resummarizeAbove(parent);
        for (Node* node = parent; node && node != m_root.get(); node = node->parent)
            Q_EMIT dataChanged(indexOfNode(node, 0), indexOfNode(node, ColumnCount - 1));
    }
}

// ---- QAbstractItemModel ---------------------------------------------------------------------

RunTreeModel::Node* RunTreeModel::nodeOf(const QModelIndex& index) const
{
    return index.isValid() ? static_cast<Node*>(index.internalPointer()) : m_root.get();
}

int RunTreeModel::rowOf(const Node* node) const
{
    if (!node->parent)
        return 0;
    const auto& c = node->parent->children;
    for (size_t i = 0; i < c.size(); ++i)
        if (c[i].get() == node)
            return int(i);
    return -1;
}

QModelIndex RunTreeModel::indexOfNode(const Node* node, int column) const
{
    if (!node || node == m_root.get())
        return QModelIndex();
    return createIndex(rowOf(node), column, const_cast<Node*>(node));
}

QModelIndex RunTreeModel::index(int row, int column, const QModelIndex& parent) const
{
    if (column < 0 || column >= ColumnCount || row < 0)
        return QModelIndex();
    if (parent.isValid() && parent.column() != 0)
        return QModelIndex();
    const Node* p = nodeOf(parent);
    if (row >= int(p->children.size()))
        return QModelIndex();
    return createIndex(row, column, p->children[size_t(row)].get());
}

QModelIndex RunTreeModel::parent(const QModelIndex& child) const
{
    if (!child.isValid())
        return QModelIndex();
    const Node* node = nodeOf(child);
    return indexOfNode(node->parent, 0);
}

int RunTreeModel::rowCount(const QModelIndex& parent) const
{
    if (parent.isValid() && parent.column() != 0)
        return 0;
    return int(nodeOf(parent)->children.size());
}

int RunTreeModel::columnCount(const QModelIndex&) const
{
    return ColumnCount;
}

bool RunTreeModel::hasChildren(const QModelIndex& parent) const
{
    return rowCount(parent) > 0;
}

Qt::ItemFlags RunTreeModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    if (nodeOf(index)->kind == UnitKind)
        f |= Qt::ItemNeverHasChildren;
    return f;
}

QVariant RunTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::TextAlignmentRole && section >= SpeedupColumn)
        return int(Qt::AlignRight | Qt::AlignVCenter); // over their right-aligned numbers
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractItemModel::headerData(section, orientation, role);
    switch (section) {
    case ItemColumn: return tr("Task / turn / sample");
    case RoleColumn: return tr("Role");
    case StatusColumn: return tr("Status");
    case SpeedupColumn: return tr("Speedup");
    case MaxAbsDiffColumn: return tr("Max |diff|");
    case TokensColumn: return tr("Tokens in / out");
    case LatencyColumn: return tr("Latency");
    }
    return {};
}

QString RunTreeModel::unitStatus(const RunTreeUnit& u) const
{
    if (u.evaluationId != 0 || !u.status.isEmpty())
        return u.notCounted ? u.status + QStringLiteral(" (not counted)") : u.status;
    if (!u.error.isEmpty())
        return QStringLiteral("request failed");
    if (u.generating)
        return QStringLiteral("generating…");
    if (u.responseId == 0)
        return QStringLiteral("waiting");
    if (!isAnswerRole(u.role))
        return QStringLiteral("answered");
    return m_live ? QStringLiteral("evaluating…") : QStringLiteral("not evaluated");
}

RunTreeModel::Summary RunTreeModel::summarize(const Node* node) const
{
    Summary s;
    // The evaluated units, for the run's own pick (core/study/taskbest.h: the candidate Results,
    // the Roofline and Diff name as this run's for the task).
    std::vector<const RunTreeUnit*> evaluated;
    QList<PickCandidate> picks;
    const auto visit = [&](const Node* unitNode) {
        const RunTreeUnit& u = unitNode->unit;
        ++s.units;
        s.generating += u.generating ? 1 : 0;
        s.failed += u.error.isEmpty() ? 0 : 1;
        addOptional(s.tokensIn, u.tokensIn);
        addOptional(s.tokensOut, u.tokensOut);
        addOptional(s.latencyMs, u.latencyMs);
        if (u.status.isEmpty())
            return;
        ++s.evaluated;
        evaluated.push_back(&u);
        picks.append(PickCandidate{0, u.evaluationId, unitNode->parent->turn, u.sample, u.evaluation});
    };
    if (node->kind == TurnKind) {
        for (const auto& unit : node->children)
            visit(unit.get());
    } else if (node->kind == TaskKind) {
        for (const auto& turn : node->children)
            for (const auto& unit : turn->children)
                visit(unit.get());
    }
    if (const std::optional<int> kept = keptCandidate(picks, taskSelection(m_config, node->task)))
        s.best = evaluated.at(std::size_t(*kept));
    return s;
}

QVariant RunTreeModel::display(const Node* node, int column) const
{
    if (node->kind == UnitKind) {
        const RunTreeUnit& u = node->unit;
        switch (column) {
        case ItemColumn: return isAnswerRole(u.role) ? tr("Sample %1").arg(u.sample) : tr("Notes");
        case RoleColumn: return u.role;
        case StatusColumn: return unitStatus(u);
        case SpeedupColumn: return u.speedup ? formatSpeedup(*u.speedup, u.speedupInterval) : QString();
        case MaxAbsDiffColumn: return u.maxAbsDiffText;
        case TokensColumn: return tokensText(u.tokensIn, u.tokensOut);
        case LatencyColumn: return u.latencyMs ? durationCell(u.latencyMs) : QString();
        }
        return {};
    }
    const Summary& s = node->summary;
    switch (column) {
    case ItemColumn: return node->kind == TaskKind ? node->task : tr("Turn %1").arg(node->turn);
    case RoleColumn:
        return node->kind == TaskKind ? counted(qint64(node->children.size()), tr("turn"), tr("turns")) : QString();
    case StatusColumn:
        if (s.best)
            return s.best->status;
        if (s.generating > 0)
            return QStringLiteral("generating…");
        if (s.failed > 0)
            return QStringLiteral("request failed");
        return s.units > 0 ? QStringLiteral("no evaluation") : QString();
    case SpeedupColumn:
        return s.best && s.best->speedup ? formatSpeedup(*s.best->speedup, s.best->speedupInterval) : QString();
    case MaxAbsDiffColumn: return s.best ? s.best->maxAbsDiffText : QString();
    case TokensColumn: return tokensText(s.tokensIn, s.tokensOut);
    case LatencyColumn: return s.latencyMs ? durationCell(s.latencyMs) : QString();
    }
    return {};
}

QVariant RunTreeModel::sortValue(const Node* node, int column) const
{
    const RunTreeUnit* u = nullptr;
    Summary s;
    if (node->kind == UnitKind) {
        u = &node->unit;
    } else {
        s = node->summary;
        u = s.best;
    }
    switch (column) {
    case ItemColumn:
        if (node->kind == TaskKind) {
            const auto order = taskOrder(node->task);
            return qint64(order.first) * 100000 + order.second;
        }
        return node->kind == TurnKind ? node->turn : node->unit.sample;
    case SpeedupColumn: return u && u->speedup ? QVariant(*u->speedup) : QVariant(-1.0);
    case MaxAbsDiffColumn: return u && u->maxAbsDiff ? QVariant(*u->maxAbsDiff) : QVariant(-1.0);
    case TokensColumn: {
        const auto out = node->kind == UnitKind ? node->unit.tokensOut : s.tokensOut;
        return out ? QVariant(*out) : QVariant(qint64(-1));
    }
    case LatencyColumn: {
        const auto ms = node->kind == UnitKind ? node->unit.latencyMs : s.latencyMs;
        return ms ? QVariant(*ms) : QVariant(qint64(-1));
    }
    default: return display(node, column);
    }
}

QVariant RunTreeModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.model() != this)
        return {};
    const Node* node = nodeOf(index);
    switch (role) {
    case Qt::DisplayRole: return display(node, index.column());
    case Qt::TextAlignmentRole:
        if (index.column() >= SpeedupColumn)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::ForegroundRole:
        if (index.column() == StatusColumn) {
            const QColor color = statusColor(display(node, StatusColumn).toString());
            if (color.isValid())
                return QBrush(color);
        }
        return {};
    case Qt::ToolTipRole:
        if (node->kind == UnitKind && index.column() == StatusColumn) {
            QString tip = node->unit.error.isEmpty() ? node->unit.evaluation.message : node->unit.error;
            // A copy of an identical answer's evaluation (evaluate identical once) says so: its
            // numbers were measured once, for that candidate.
            const QJsonValue from = node->unit.evaluation.raw.value(QLatin1String(kReusedFromCandidateKey));
            if (from.isDouble())
                tip += (tip.isEmpty() ? QString() : QStringLiteral("\n\n")) +
                       tr("The same answer as candidate %1: its evaluation, reused (evaluate identical once), "
                          "not measured again.")
                           .arg(from.toInteger());
            return tip.isEmpty() ? QVariant() : QVariant(tip);
        }
        return {};
    case KindRole: return int(node->kind);
    case TaskRole: return node->task;
    case TurnRole: return node->kind == TaskKind ? QVariant() : QVariant(node->turn);
    case SampleRole: return node->kind == UnitKind ? QVariant(node->unit.sample) : QVariant();
    case UnitRoleRole: return node->kind == UnitKind ? QVariant(node->unit.role) : QVariant();
    case StatusRole: return display(node, StatusColumn);
    case TextRole: return node->kind == UnitKind ? QVariant(node->unit.text) : QVariant();
    case CompileLogRole:
        if (node->kind != UnitKind)
            return {};
        return node->unit.evaluation.compile.value_or(CompileInfo()).log;
    case MessageRole:
        if (node->kind != UnitKind)
            return {};
        return node->unit.error.isEmpty() ? node->unit.evaluation.message : node->unit.error;
    case SortRole: return sortValue(node, index.column());
    }
    return {};
}

std::optional<UnitKey> RunTreeModel::unitKey(const QModelIndex& index) const
{
    if (!index.isValid())
        return std::nullopt;
    const Node* node = nodeOf(index);
    if (node->kind != UnitKind)
        return std::nullopt;
    return UnitKey{node->task, node->turn, node->unit.sample, node->unit.role};
}

const RunTreeUnit* RunTreeModel::unit(const QModelIndex& index) const
{
    if (!index.isValid())
        return nullptr;
    const Node* node = nodeOf(index);
    return node->kind == UnitKind ? &node->unit : nullptr;
}

QModelIndex RunTreeModel::indexOf(const UnitKey& key, int column) const
{
    Node* task = findTask(key.task);
    Node* turn = task ? findTurn(task, key.turn) : nullptr;
    Node* unit = turn ? findUnit(turn, key.sample, key.role) : nullptr;
    return indexOfNode(unit, column);
}

QModelIndex RunTreeModel::indexOfTask(const QString& task, int column) const
{
    return indexOfNode(findTask(task), column);
}

int RunTreeModel::taskCount() const
{
    return int(m_root->children.size());
}

int RunTreeModel::unitCount() const
{
    int n = 0;
    for (const auto& task : m_root->children)
        for (const auto& turn : task->children)
            n += int(turn->children.size());
    return n;
}

} // namespace kwb::app
