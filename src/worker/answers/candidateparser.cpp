#include "worker/answers/candidateparser.h"
#include "core/protocol/modeltext.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

namespace kwb {
namespace {

// ---------------------------------------------------------------------------------------------
// Small string helpers

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}
bool isIdentStart(char c)
{
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool isIdentChar(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string trim(const std::string& s)
{
    size_t b = 0, e = s.size();
    while (b < e && isSpace(s[b]))
        ++b;
    while (e > b && isSpace(s[e - 1]))
        --e;
    return s.substr(b, e - b);
}

std::string lower(std::string s)
{
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string removeSpaces(const std::string& s)
{
    std::string out;
    for (char c : s)
        if (!isSpace(c))
            out += c;
    return out;
}

std::string joinNames(const std::vector<std::string>& v, const std::string& sep)
{
    std::string out;
    for (size_t i = 0; i < v.size(); ++i)
        out += (i ? sep : "") + v[i];
    return out;
}

std::string joinLines(const std::vector<int>& lines)
{
    std::vector<std::string> s;
    for (int l : lines)
        s.push_back(std::to_string(l));
    if (s.size() <= 1)
        return joinNames(s, "");
    std::string last = s.back();
    s.pop_back();
    return joinNames(s, ", ") + " and " + last;
}

// 1-based line numbers of byte offsets in `s`. Offsets asked for in increasing order cost one
// pass over the text in all (counting from 0 each time made many sites quadratic).
class LineCounter
{
public:
    explicit LineCounter(const std::string& s)
        : m_s(s)
    {}
    int at(size_t pos)
    {
        pos = std::min(pos, m_s.size());
        if (pos < m_pos) {
            m_pos = 0;
            m_line = 1;
        }
        m_line += static_cast<int>(
            std::count(m_s.begin() + static_cast<long>(m_pos), m_s.begin() + static_cast<long>(pos), '\n'));
        m_pos = pos;
        return m_line;
    }

private:
    const std::string& m_s;
    size_t m_pos = 0;
    int m_line = 1;
};

// ---------------------------------------------------------------------------------------------
// Markdown fences (CommonMark rules, made lenient about indentation because models put blocks
// inside list items)

struct Block
{
    std::string tag;   // first word of the info string, lowercased; "" when untagged
    std::string info;  // the whole info string as written
    int fenceLine = 0; // answer line of the opening fence
    std::string content;
    bool closed = true;
};

struct FenceScan
{
    std::vector<Block> blocks;
    int unclosedLine = 0; // first unclosed fence, 0 if none
    std::string unclosedInfo;
};

std::vector<std::string> splitLines(const std::string& s)
{
    std::vector<std::string> lines;
    size_t start = 0;
    while (start <= s.size()) {
        size_t nl = s.find('\n', start);
        std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        lines.push_back(line);
        if (nl == std::string::npos)
            break;
        start = nl + 1;
    }
    return lines;
}

size_t leadingWhitespace(const std::string& line)
{
    size_t i = 0;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
        ++i;
    return i;
}

// An opening fence: returns the fence char and length, and the info string.
bool openingFence(const std::string& line, char* ch, size_t* len, std::string* info)
{
    size_t i = leadingWhitespace(line);
    if (i >= line.size() || (line[i] != '`' && line[i] != '~'))
        return false;
    char c = line[i];
    size_t j = i;
    while (j < line.size() && line[j] == c)
        ++j;
    if (j - i < 3)
        return false;
    std::string rest = line.substr(j);
    // "```foo```" on one line is inline code, not a fence (CommonMark forbids ` in the info string)
    if (c == '`' && rest.find('`') != std::string::npos)
        return false;
    *ch = c;
    *len = j - i;
    *info = trim(rest);
    return true;
}

bool closingFence(const std::string& line, char ch, size_t len)
{
    size_t i = leadingWhitespace(line);
    size_t j = i;
    while (j < line.size() && line[j] == ch)
        ++j;
    if (j - i < len)
        return false;
    return trim(line.substr(j)).empty();
}

std::string tagOf(const std::string& info)
{
    std::string word;
    for (char c : info) {
        if (isSpace(c))
            break;
        word += c;
    }
    // "{.python}", "{python}", "python:forward.py", "cuda,linenos"
    while (!word.empty() && (word.front() == '{' || word.front() == '.'))
        word.erase(word.begin());
    size_t cut = word.find_first_of(":,}");
    if (cut != std::string::npos)
        word.resize(cut);
    return lower(word);
}

std::string stripIndent(const std::string& line, size_t indent)
{
    size_t i = 0;
    while (i < indent && i < line.size() && (line[i] == ' ' || line[i] == '\t'))
        ++i;
    return line.substr(i);
}

// Scans lines [from, to) of `lines` whose first element is answer line `firstLine`. Blocks tagged
// markdown/md are transparent: an answer wrapped in ````markdown still counts.
void scanFences(const std::vector<std::string>& lines, size_t from, size_t to, int firstLine, FenceScan* out,
                int depth = 0)
{
    size_t i = from;
    while (i < to) {
        char ch;
        size_t len;
        std::string info;
        if (!openingFence(lines[i], &ch, &len, &info)) {
            ++i;
            continue;
        }
        Block b;
        b.info = info;
        b.tag = tagOf(info);
        b.fenceLine = firstLine + static_cast<int>(i - from);
        size_t indent = leadingWhitespace(lines[i]);
        size_t j = i + 1;
        std::vector<std::string> content;
        while (j < to && !closingFence(lines[j], ch, len))
            content.push_back(stripIndent(lines[j++], indent));
        b.closed = j < to;
        for (size_t k = 0; k < content.size(); ++k)
            b.content += content[k] + (k + 1 < content.size() ? "\n" : "");
        if (!content.empty())
            b.content += "\n";
        if (!b.closed && out->unclosedLine == 0) {
            out->unclosedLine = b.fenceLine;
            out->unclosedInfo = info;
        }
        const bool closed = b.closed;
        if ((b.tag == "markdown" || b.tag == "md") && depth < 4)
            scanFences(content, 0, content.size(), b.fenceLine + 1, out, depth + 1);
        else
            out->blocks.push_back(std::move(b));
        i = closed ? j + 1 : to;
    }
}

// ---------------------------------------------------------------------------------------------
// Python: a mask of the source with comments blanked and string contents replaced by 'x', same
// length and same newlines, so searches cannot match inside strings or comments.

std::string maskPython(const std::string& src)
{
    std::string m = src;
    size_t i = 0, n = src.size();
    while (i < n) {
        char c = src[i];
        if (c == '#') {
            while (i < n && src[i] != '\n')
                m[i++] = ' ';
            continue;
        }
        if (c == '"' || c == '\'') {
            bool raw = false;
            for (size_t k = i; k > 0 && isIdentChar(src[k - 1]); --k)
                if (src[k - 1] == 'r' || src[k - 1] == 'R')
                    raw = true;
            bool triple = i + 2 < n && src[i + 1] == c && src[i + 2] == c;
            size_t q = triple ? 3 : 1;
            size_t j = i + q;
            while (j < n) {
                if (!raw && src[j] == '\\' && j + 1 < n) {
                    m[j] = 'x';
                    if (src[j + 1] != '\n')
                        m[j + 1] = 'x';
                    j += 2;
                    continue;
                }
                if (triple && j + 2 < n && src[j] == c && src[j + 1] == c && src[j + 2] == c)
                    break;
                if (!triple && src[j] == c)
                    break;
                if (!triple && src[j] == '\n')
                    break; // unterminated: stop at the line end
                if (src[j] != '\n')
                    m[j] = 'x';
                ++j;
            }
            i = (j < n && src[j] != '\n') ? j + q : j;
            continue;
        }
        ++i;
    }
    return m;
}

// Index of the bracket matching the opening one at `open` in masked text, or npos.
size_t matchBracket(const std::string& m, size_t open)
{
    int depth = 0;
    for (size_t i = open; i < m.size(); ++i) {
        char c = m[i];
        if (c == '(' || c == '[' || c == '{')
            ++depth;
        else if (c == ')' || c == ']' || c == '}') {
            if (--depth == 0)
                return i;
        }
    }
    return std::string::npos;
}

// Splits masked text at commas outside brackets.
std::vector<std::string> splitTopLevel(const std::string& s, char sep)
{
    std::vector<std::string> parts;
    int depth = 0;
    std::string cur;
    for (char c : s) {
        if (c == '(' || c == '[' || c == '{')
            ++depth;
        if (c == ')' || c == ']' || c == '}')
            --depth;
        if (c == sep && depth == 0) {
            parts.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    parts.push_back(cur);
    return parts;
}

size_t findTopLevel(const std::string& s, char what)
{
    int depth = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == '(' || c == '[' || c == '{')
            ++depth;
        if (c == ')' || c == ']' || c == '}')
            --depth;
        if (c == what && depth == 0)
            return i;
    }
    return std::string::npos;
}

std::string normaliseType(const std::string& t)
{
    std::string s = removeSpaces(t), out;
    for (char c : s) {
        out += c;
        if (c == ',')
            out += ' ';
    }
    return out;
}

// Types compare without whitespace; torch.Tensor is Tensor and a missing annotation is Tensor,
// as in TorchScript.
std::string canonicalType(const std::string& t)
{
    std::string s = removeSpaces(t);
    if (s.empty())
        return "Tensor";
    std::string out;
    const std::string tt = "torch.Tensor";
    for (size_t i = 0; i < s.size();) {
        if (s.compare(i, tt.size(), tt) == 0 && (i == 0 || !isIdentChar(s[i - 1])) &&
            (i + tt.size() == s.size() || !isIdentChar(s[i + tt.size()]))) {
            out += "Tensor";
            i += tt.size();
        } else {
            out += s[i++];
        }
    }
    return out;
}

struct ForwardScan
{
    bool found = false; // a top-level def forward(
    int line = 0;       // its line within the python block
    int nestedLine = 0; // line of an indented def forward (a method), when no top-level one
    int classLine = 0;  // first top-level class statement
    std::string className;
    std::vector<SigParam> params;
    std::string error; // malformed definition
};

// Matches "def<ws>forward<ws>(" at `pos` in masked text; returns the index of '(' or npos.
size_t defForwardAt(const std::string& m, size_t pos)
{
    if (m.compare(pos, 3, "def") != 0)
        return std::string::npos;
    size_t i = pos + 3;
    if (i >= m.size() || (m[i] != ' ' && m[i] != '\t'))
        return std::string::npos;
    while (i < m.size() && (m[i] == ' ' || m[i] == '\t'))
        ++i;
    if (m.compare(i, 7, "forward") != 0)
        return std::string::npos;
    i += 7;
    while (i < m.size() && (m[i] == ' ' || m[i] == '\t'))
        ++i;
    return (i < m.size() && m[i] == '(') ? i : std::string::npos;
}

ForwardScan scanForward(const std::string& python)
{
    ForwardScan r;
    const std::string m = maskPython(python);
    size_t lineStart = 0;
    int lineNo = 1;
    size_t open = std::string::npos;
    while (lineStart <= m.size()) {
        size_t lineEnd = m.find('\n', lineStart);
        if (lineEnd == std::string::npos)
            lineEnd = m.size();
        size_t ind = lineStart;
        while (ind < lineEnd && (m[ind] == ' ' || m[ind] == '\t'))
            ++ind;
        size_t paren = defForwardAt(m, ind);
        if (paren != std::string::npos) {
            if (ind == lineStart) {
                open = paren;
                r.found = true;
                r.line = lineNo;
                break;
            }
            if (!r.nestedLine)
                r.nestedLine = lineNo;
        }
        if (ind == lineStart && !r.classLine && m.compare(ind, 6, "class ") == 0) {
            r.classLine = lineNo;
            size_t k = ind + 6;
            while (k < lineEnd && (m[k] == ' '))
                ++k;
            while (k < lineEnd && isIdentChar(m[k]))
                r.className += m[k++];
        }
        if (lineEnd == m.size())
            break;
        lineStart = lineEnd + 1;
        ++lineNo;
    }
    if (!r.found)
        return r;
    size_t close = matchBracket(m, open);
    if (close == std::string::npos) {
        r.error = "the parameter list of def forward( at line " + std::to_string(r.line) + " is never closed by ')'";
        return r;
    }
    for (const std::string& raw : splitTopLevel(m.substr(open + 1, close - open - 1), ',')) {
        std::string p = trim(raw);
        if (p.empty())
            continue; // trailing comma
        size_t eq = findTopLevel(p, '=');
        if (eq != std::string::npos)
            p = trim(p.substr(0, eq));
        SigParam sp;
        size_t colon = findTopLevel(p, ':');
        if (colon == std::string::npos) {
            sp.name = removeSpaces(p);
        } else {
            sp.name = removeSpaces(p.substr(0, colon));
            sp.type = normaliseType(p.substr(colon + 1));
        }
        r.params.push_back(sp);
    }
    return r;
}

// ---------------------------------------------------------------------------------------------
// C++/CUDA tokens, enough to find kernels and their parameters

struct Token
{
    enum Kind { Ident, Punct, String, Number } kind;
    std::string text;
    int line;
};

// Comments and preprocessor lines become spaces (newlines kept), so offsets and lines survive.
std::string stripCppComments(const std::string& src)
{
    std::string m = src;
    size_t i = 0, n = src.size();
    bool lineStart = true;
    while (i < n) {
        char c = src[i];
        if (c == '\n') {
            lineStart = true;
            ++i;
            continue;
        }
        if (lineStart && c == '#') {
            // a directive, with backslash continuations
            while (i < n && src[i] != '\n') {
                if (src[i] == '\\' && i + 1 < n && src[i + 1] == '\n') {
                    m[i] = ' ';
                    i += 2;
                    continue;
                }
                if (src[i] == '/' && i + 1 < n && src[i + 1] == '*')
                    break;
                m[i++] = ' ';
            }
            continue;
        }
        if (!isSpace(c))
            lineStart = false;
        if (c == '/' && i + 1 < n && src[i + 1] == '/') {
            while (i < n && src[i] != '\n')
                m[i++] = ' ';
            continue;
        }
        if (c == '/' && i + 1 < n && src[i + 1] == '*') {
            size_t end = src.find("*/", i + 2);
            size_t stop = end == std::string::npos ? n : end + 2;
            for (; i < stop; ++i)
                if (src[i] != '\n')
                    m[i] = ' ';
            continue;
        }
        if (c == '"' || c == '\'') {
            size_t j = i + 1;
            while (j < n && src[j] != c && src[j] != '\n')
                j += (src[j] == '\\') ? 2 : 1;
            i = std::min(n, j + 1);
            continue;
        }
        ++i;
    }
    return m;
}

std::vector<Token> tokenize(const std::string& s)
{
    std::vector<Token> t;
    int line = 1;
    size_t i = 0, n = s.size();
    while (i < n) {
        char c = s[i];
        if (c == '\n') {
            ++line;
            ++i;
        } else if (isSpace(c)) {
            ++i;
        } else if (isIdentStart(c)) {
            size_t j = i;
            while (j < n && isIdentChar(s[j]))
                ++j;
            t.push_back({Token::Ident, s.substr(i, j - i), line});
            i = j;
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            size_t j = i;
            while (j < n && (isIdentChar(s[j]) || s[j] == '.'))
                ++j;
            t.push_back({Token::Number, s.substr(i, j - i), line});
            i = j;
        } else if (c == '"' || c == '\'') {
            size_t j = i + 1;
            while (j < n && s[j] != c && s[j] != '\n')
                j += (s[j] == '\\') ? 2 : 1;
            j = std::min(n, j);
            t.push_back({Token::String, s.substr(i + 1, j - i - 1), line});
            i = std::min(n, j + 1);
        } else if (c == ':' && i + 1 < n && s[i + 1] == ':') {
            t.push_back({Token::Punct, "::", line});
            i += 2;
        } else {
            t.push_back({Token::Punct, std::string(1, c), line});
            ++i;
        }
    }
    return t;
}

bool isPunct(const Token& t, const char* p)
{
    return t.kind == Token::Punct && t.text == p;
}

// For every '(', '[' and '{' token the index of the token closing it (each kind counted on its
// own), t.size() where none does; other tokens get t.size() too. One pass with explicit stacks:
// matching from each opening bracket in turn was quadratic, and the nesting depth is the input's.
std::vector<size_t> matchBrackets(const std::vector<Token>& t)
{
    std::vector<size_t> match(t.size(), t.size());
    std::vector<size_t> open[3];
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i].kind != Token::Punct || t[i].text.size() != 1)
            continue;
        const char c = t[i].text[0];
        const int kind = c == '(' || c == ')' ? 0 : c == '[' || c == ']' ? 1 : c == '{' || c == '}' ? 2 : -1;
        if (kind < 0)
            continue;
        std::vector<size_t>& st = open[kind];
        if (c == '(' || c == '[' || c == '{') {
            st.push_back(i);
        } else if (!st.empty()) {
            match[st.back()] = i;
            st.pop_back();
        }
    }
    return match;
}

struct BaseType
{
    KernelParam::Kind kind;
    int bytes;
};

const std::map<std::string, BaseType>& baseTypes()
{
    static const std::map<std::string, BaseType> m = {
        {"int", {KernelParam::Int, 4}},
        {"signed", {KernelParam::Int, 4}},
        {"signed int", {KernelParam::Int, 4}},
        {"unsigned", {KernelParam::Int, 4}},
        {"unsigned int", {KernelParam::Int, 4}},
        {"int32_t", {KernelParam::Int, 4}},
        {"uint32_t", {KernelParam::Int, 4}},
        {"long", {KernelParam::Int, 8}},
        {"long int", {KernelParam::Int, 8}},
        {"unsigned long", {KernelParam::Int, 8}},
        {"unsigned long int", {KernelParam::Int, 8}},
        {"long long", {KernelParam::Int, 8}},
        {"long long int", {KernelParam::Int, 8}},
        {"unsigned long long", {KernelParam::Int, 8}},
        {"unsigned long long int", {KernelParam::Int, 8}},
        {"signed long long", {KernelParam::Int, 8}},
        {"int64_t", {KernelParam::Int, 8}},
        {"uint64_t", {KernelParam::Int, 8}},
        {"size_t", {KernelParam::Int, 8}},
        {"ptrdiff_t", {KernelParam::Int, 8}},
        {"intptr_t", {KernelParam::Int, 8}},
        {"uintptr_t", {KernelParam::Int, 8}},
        {"ssize_t", {KernelParam::Int, 8}},
        {"short", {KernelParam::Int, 2}},
        {"short int", {KernelParam::Int, 2}},
        {"unsigned short", {KernelParam::Int, 2}},
        {"int16_t", {KernelParam::Int, 2}},
        {"uint16_t", {KernelParam::Int, 2}},
        {"char", {KernelParam::Int, 1}},
        {"signed char", {KernelParam::Int, 1}},
        {"unsigned char", {KernelParam::Int, 1}},
        {"int8_t", {KernelParam::Int, 1}},
        {"uint8_t", {KernelParam::Int, 1}},
        {"bool", {KernelParam::Int, 1}},
        {"float", {KernelParam::Float, 4}},
        {"double", {KernelParam::Float, 8}},
        {"half", {KernelParam::Other, 2}},
        {"__half", {KernelParam::Other, 2}},
        {"__nv_bfloat16", {KernelParam::Other, 2}},
        {"nv_bfloat16", {KernelParam::Other, 2}},
        {"half2", {KernelParam::Other, 4}},
        {"__half2", {KernelParam::Other, 4}},
        {"__nv_bfloat162", {KernelParam::Other, 4}},
        {"float2", {KernelParam::Other, 8}},
        {"float4", {KernelParam::Other, 16}},
        {"int2", {KernelParam::Other, 8}},
        {"int4", {KernelParam::Other, 16}},
        {"double2", {KernelParam::Other, 16}},
    };
    return m;
}

bool isQualifier(const std::string& s)
{
    static const std::set<std::string> q = {"const",    "volatile",          "__restrict__", "__restrict",
                                            "restrict", "__grid_constant__", "struct",       "typename"};
    return q.count(s) > 0;
}

std::string joinTokens(const std::vector<Token>& t, size_t b, size_t e)
{
    std::string out;
    for (size_t i = b; i < e; ++i) {
        bool word = t[i].kind == Token::Ident || t[i].kind == Token::Number;
        if (!out.empty()) {
            char prev = out.back();
            bool prevWord = isIdentChar(prev);
            if ((word && prevWord) || (word && (prev == '*' || prev == '&' || prev == ',')) ||
                (t[i].text == "*" && prev == ','))
                out += ' ';
        }
        out += t[i].text;
    }
    return out;
}

KernelParam parseParam(const std::vector<Token>& all, size_t b, size_t e)
{
    // cut a default value
    for (size_t i = b; i < e; ++i)
        if (isPunct(all[i], "=")) {
            e = i;
            break;
        }
    KernelParam p;
    bool array = false;
    // trailing [..] groups make an array parameter, i.e. a pointer
    while (e > b && isPunct(all[e - 1], "]")) {
        size_t k = e - 1;
        int depth = 0;
        for (; k > b; --k) {
            if (isPunct(all[k], "]"))
                ++depth;
            if (isPunct(all[k], "[") && --depth == 0)
                break;
        }
        e = k;
        array = true;
    }
    size_t typeEnd = e;
    if (e > b && all[e - 1].kind == Token::Ident && !isQualifier(all[e - 1].text) &&
        !baseTypes().count(all[e - 1].text)) {
        // the last identifier is the name unless it is all there is (a lone typedef name)
        bool onlyToken = e - 1 == b;
        if (!onlyToken) {
            p.name = all[e - 1].text;
            typeEnd = e - 1;
        }
    }
    p.type = joinTokens(all, b, typeEnd);
    if (array)
        p.type += "*";
    bool pointer = array;
    std::vector<std::string> words;
    bool reference = false;
    for (size_t i = b; i < typeEnd; ++i) {
        if (isPunct(all[i], "*"))
            pointer = true;
        if (isPunct(all[i], "&"))
            reference = true;
        if (all[i].kind == Token::Ident && !isQualifier(all[i].text))
            words.push_back(all[i].text);
        if (isPunct(all[i], "::") && !words.empty()) {
            // std::size_t -> size_t: the namespace does not change the size
            words.pop_back();
        }
    }
    if (pointer) {
        p.kind = KernelParam::Pointer;
        p.bytes = 8;
        return p;
    }
    if (reference)
        return p;
    auto it = baseTypes().find(joinNames(words, " "));
    if (it != baseTypes().end()) {
        p.kind = it->second.kind;
        p.bytes = it->second.bytes;
    }
    return p;
}

struct FoundKernel
{
    KernelDecl decl;
    bool isTemplate = false;
    bool hasBody = false;
};

bool isAttribute(const Token& t)
{
    return t.kind == Token::Ident &&
           (t.text == "__launch_bounds__" || t.text == "__cluster_dims__" || t.text == "__maxnreg__" ||
            t.text == "__attribute__" || t.text == "alignas" || t.text == "__declspec");
}
bool endsDeclaration(const Token& t)
{
    return t.kind == Token::Punct && (t.text == ";" || t.text == "{" || t.text == "}");
}

// Every look-ahead below is a table filled in one backward pass, so the scan stays linear in
// the number of tokens whatever the source (a kernel's searches used to run to the end of the
// source for each __global__).
std::vector<FoundKernel> scanKernels(const std::string& cuda)
{
    const std::vector<Token> t = tokenize(stripCppComments(cuda));
    const size_t n = t.size();
    const std::vector<size_t> match = matchBrackets(t);
    // nameParen[j]: the '(' that a kernel-name search starting at token j stops at (skipping
    // attributes' and [[...]] arguments), or n when it meets the end of the declaration first.
    // nextEnd[j]: the first ';', '{' or '}' at or after j, or n.
    // templates[j]: how many "template" tokens come before token j.
    std::vector<size_t> nameParen(n + 1, n), nextEnd(n + 1, n), templates(n + 1, 0);
    for (size_t j = 0; j < n; ++j)
        templates[j + 1] = templates[j] + (t[j].kind == Token::Ident && t[j].text == "template");
    for (size_t j = n; j-- > 0;) {
        nextEnd[j] = endsDeclaration(t[j]) ? j : nextEnd[j + 1];
        if (endsDeclaration(t[j]))
            nameParen[j] = n;
        else if (isAttribute(t[j]) && j + 1 < n && isPunct(t[j + 1], "("))
            nameParen[j] = match[j + 1] < n ? nameParen[match[j + 1] + 1] : n;
        else if (isPunct(t[j], "[") && j + 1 < n && isPunct(t[j + 1], "["))
            nameParen[j] = match[j] < n ? nameParen[match[j] + 1] : n;
        else if (isPunct(t[j], "("))
            nameParen[j] = j;
        else
            nameParen[j] = nameParen[j + 1];
    }
    std::vector<FoundKernel> found;
    std::unordered_map<std::string, size_t> foundByName;
    std::vector<bool> braces; // per open '{': is it an extern "C" { block
    size_t externBraces = 0;  // how many of them are
    bool pendingExternC = false;
    size_t declStart = 0; // first token of the current declaration
    for (size_t i = 0; i < n; ++i) {
        const Token& tk = t[i];
        if (endsDeclaration(tk)) {
            if (tk.text == "{") {
                braces.push_back(pendingExternC);
                externBraces += pendingExternC;
            } else if (tk.text == "}" && !braces.empty()) {
                externBraces -= braces.back();
                braces.pop_back();
            }
            pendingExternC = false;
            declStart = i + 1;
            continue;
        }
        if (tk.kind == Token::Ident && tk.text == "extern" && i + 1 < n && t[i + 1].kind == Token::String &&
            t[i + 1].text == "C") {
            pendingExternC = true;
            continue;
        }
        if (tk.kind != Token::Ident || tk.text != "__global__")
            continue;

        FoundKernel k;
        k.decl.line = tk.line;
        k.decl.externC = pendingExternC || externBraces > 0;
        k.isTemplate = templates[i] > templates[declStart];
        // the name is the identifier before the first '(' that is not an attribute's
        const size_t open = nameParen[i + 1];
        if (open >= n || t[open - 1].kind != Token::Ident)
            continue;
        k.decl.name = t[open - 1].text;
        const size_t close = match[open];
        if (close >= n)
            continue;
        // parameters, split at top-level commas
        size_t b = open + 1;
        int depth = 0;
        for (size_t q = open + 1; q <= close; ++q) {
            const Token& x = t[q];
            if (x.kind == Token::Punct && (x.text == "(" || x.text == "[" || x.text == "{" || x.text == "<"))
                ++depth;
            if (x.kind == Token::Punct && (x.text == ")" || x.text == "]" || x.text == "}" || x.text == ">"))
                --depth;
            if ((q == close) || (depth == 0 && isPunct(x, ","))) {
                bool lonelyVoid = q == close && b + 1 == q && t[b].kind == Token::Ident && t[b].text == "void" &&
                                  k.decl.params.empty();
                if (q > b && !lonelyVoid)
                    k.decl.params.push_back(parseParam(t, b, q));
                b = q + 1;
            }
        }
        const size_t end = nextEnd[close + 1];
        k.hasBody = end < n && isPunct(t[end], "{");
        // a prototype followed by its definition counts once
        auto same = foundByName.find(k.decl.name);
        if (same == foundByName.end()) {
            foundByName.emplace(k.decl.name, found.size());
            found.push_back(std::move(k));
        } else {
            FoundKernel& f = found[same->second];
            bool externC = f.decl.externC || k.decl.externC;
            if (k.hasBody && !f.hasBody)
                f = std::move(k);
            f.decl.externC = externC;
        }
        i = close;
    }
    return found;
}

// ---------------------------------------------------------------------------------------------
// kb.launch sites

std::vector<LaunchSite> findLaunches(const std::string& python)
{
    std::vector<LaunchSite> out;
    const std::string m = maskPython(python);
    LineCounter lines(python);
    size_t pos = 0;
    while ((pos = m.find("kb", pos)) != std::string::npos) {
        size_t start = pos;
        pos += 2;
        if (start > 0 && (isIdentChar(m[start - 1]) || m[start - 1] == '.'))
            continue;
        size_t i = start + 2;
        while (i < m.size() && (m[i] == ' ' || m[i] == '\t'))
            ++i;
        if (i >= m.size() || m[i] != '.')
            continue;
        ++i;
        while (i < m.size() && (m[i] == ' ' || m[i] == '\t'))
            ++i;
        size_t nameStart = i;
        while (i < m.size() && isIdentChar(m[i]))
            ++i;
        const bool launch = m.compare(nameStart, i - nameStart, "launch") == 0;
        const bool smem = m.compare(nameStart, i - nameStart, "launch_smem") == 0;
        if (!launch && !smem)
            continue;
        while (i < m.size() && isSpace(m[i]))
            ++i;
        if (i >= m.size() || m[i] != '(')
            continue;
        ++i;
        while (i < m.size() && isSpace(m[i]))
            ++i;
        LaunchSite site;
        site.smem = smem;
        site.line = lines.at(start);
        if (i < m.size() && (m[i] == '"' || m[i] == '\'')) {
            char q = m[i];
            size_t j = i + 1;
            while (j < python.size() && python[j] != q && python[j] != '\n')
                ++j;
            site.kernel = python.substr(i + 1, j - i - 1);
        }
        out.push_back(site);
        pos = i;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Messages

const char* kFormatReminder =
    "The answer must contain one ```cuda block (device code only, every launched kernel declared "
    "extern \"C\" __global__) and one ```python block with def forward(...) that launches the kernels with "
    "kb.launch(\"name\", [grid], [block], args...).";

FormatError makeError(const std::string& code, const std::string& message, int line)
{
    FormatError e;
    e.code = code;
    e.message = message;
    e.line = line;
    return e;
}

bool isCudaLikeTag(const std::string& t)
{
    return t == "cu" || t == "cpp" || t == "c++" || t == "c" || t == "cuh" || t == "cxx" || t == "cc" || t == "h" ||
           t == "hpp";
}
bool isPythonLikeTag(const std::string& t)
{
    return t == "py" || t == "python3" || t == "torchscript" || t == "py3" || t == "ipython" || t == "pytorch";
}

bool mentionsKernel(const std::string& s)
{
    return s.find("__global__") != std::string::npos;
}
bool mentionsForward(const std::string& s)
{
    const std::string m = maskPython(s);
    size_t pos = 0;
    while ((pos = m.find("def", pos)) != std::string::npos) {
        if (defForwardAt(m, pos) != std::string::npos && (pos == 0 || !isIdentChar(m[pos - 1])))
            return true;
        pos += 3;
    }
    return m.find("kb.launch") != std::string::npos;
}

std::string describeParam(const SigParam& p)
{
    return p.type.empty() ? p.name : p.name + ": " + p.type;
}

std::string signatureMismatch(const std::vector<SigParam>& expected, const std::vector<SigParam>& found, int line)
{
    std::string msg = "forward's parameters differ from the reference's (they must match exactly: names, order "
                      "and types).\n  expected: " +
                      formatSignature(expected) + "\n  found:    " + formatSignature(found) + "  (line " +
                      std::to_string(line) + ")\n";
    if (!found.empty() && found[0].name == "self")
        return msg + "forward must be a plain top-level function, not a method: remove `self` and any class around it.";
    size_t n = std::min(expected.size(), found.size());
    for (size_t i = 0; i < n; ++i) {
        bool nameOk = expected[i].name == found[i].name;
        bool typeOk = canonicalType(expected[i].type) == canonicalType(found[i].type);
        if (nameOk && typeOk)
            continue;
        msg += "Parameter " + std::to_string(i + 1) + ": expected `" + describeParam(expected[i]) + "`, found `" +
               describeParam(found[i]) + "`.";
        if (nameOk && !typeOk && found[i].type.empty())
            msg += " Add the type annotation.";
        return msg + " Use the expected line exactly; read weights from the dictionary p, e.g. p[\"conv.weight\"].";
    }
    if (found.size() > expected.size())
        msg += "forward has " + std::to_string(found.size()) + " parameters; the reference has " +
               std::to_string(expected.size()) + ". Remove `" + describeParam(found[expected.size()]) +
               "`: weights come from the dictionary p (e.g. p[\"conv.weight\"]), constants are written in the code.";
    else
        msg += "forward has " + std::to_string(found.size()) + " parameters; the reference has " +
               std::to_string(expected.size()) + ". Add `" + describeParam(expected[found.size()]) + "`.";
    return msg;
}

bool sameSignature(const std::vector<SigParam>& a, const std::vector<SigParam>& b)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].name != b[i].name || canonicalType(a[i].type) != canonicalType(b[i].type))
            return false;
    return true;
}

} // namespace

// ---------------------------------------------------------------------------------------------

std::string formatSignature(const std::vector<SigParam>& params)
{
    std::vector<std::string> parts;
    for (const SigParam& p : params)
        parts.push_back(describeParam(p));
    return "def forward(" + joinNames(parts, ", ") + ")";
}

std::vector<SigParam> parseForwardSignature(const std::string& python, std::string* error)
{
    if (error)
        error->clear();
    ForwardScan f = scanForward(python);
    if (!f.found) {
        if (error)
            *error = f.nestedLine ? "def forward at line " + std::to_string(f.nestedLine) +
                                        " is indented (a method or a nested function); it must be a top-level function"
                                  : "no top-level def forward(...) found";
        return {};
    }
    if (!f.error.empty()) {
        if (error)
            *error = f.error;
        return {};
    }
    return f.params;
}

std::vector<KernelDecl> findKernels(const std::string& cuda)
{
    std::vector<KernelDecl> out;
    for (FoundKernel& k : scanKernels(cuda))
        if (!k.isTemplate)
            out.push_back(std::move(k.decl));
    return out;
}

ParseResult parseAnswer(const std::string& markdown, const std::vector<SigParam>& expected)
{
    ParseResult r;
    auto fail = [&](FormatError e) {
        r.ok = false;
        r.error = std::move(e);
        return r;
    };
    if (markdown.size() > kMaxAnswerBytes)
        return fail(makeError("too_large",
                              "the answer is " + std::to_string(markdown.size()) + " bytes, more than the limit of " +
                                  std::to_string(kMaxAnswerBytes) +
                                  " bytes. Answer with one short ```cuda block and one short ```python block, without "
                                  "repeating code.",
                              0));

    // The blocks are looked for after a reasoning section (core/protocol/modeltext.h), on the
    // response's own line numbers: drafts written while thinking are not the answer.
    const auto reasoning = findReasoningSection(markdown);
    if (reasoning && !reasoning->closed)
        return fail(makeError("reasoning_unfinished", unfinishedReasoningMessage(), 1));
    const std::vector<std::string> lines = splitLines(blankReasoning(markdown, reasoning));
    FenceScan scan;
    scanFences(lines, 0, lines.size(), 1, &scan);

    if (scan.unclosedLine)
        return fail(makeError("unclosed_fence",
                              "the code block opened at line " + std::to_string(scan.unclosedLine) + " (```" +
                                  scan.unclosedInfo +
                                  ") is never closed. End every code block with a line holding only ```. (If the "
                                  "answer was cut off by the length limit, make it shorter: no explanations, no "
                                  "repeated code.)",
                              scan.unclosedLine));
    if (scan.blocks.empty() && reasoning && reasoningHasCodeBlock(markdown, *reasoning))
        return fail(makeError("code_only_in_reasoning", codeOnlyInReasoningMessage(), 1));
    if (scan.blocks.empty())
        return fail(makeError("no_code_block",
                              std::string("the answer has no fenced code block. ") + kFormatReminder +
                                  " Open each block with a line ```cuda or ```python and close it "
                                  "with a line ```.",
                              0));

    std::vector<const Block*> cudaBlocks, pythonBlocks;
    std::vector<std::string> ignored;
    for (const Block& b : scan.blocks) {
        if (b.tag == "cuda") {
            cudaBlocks.push_back(&b);
        } else if (b.tag == "python") {
            pythonBlocks.push_back(&b);
        } else if (isCudaLikeTag(b.tag) && mentionsKernel(b.content)) {
            return fail(makeError("wrong_language_tag",
                                  "the code block at line " + std::to_string(b.fenceLine) + " is tagged ```" + b.tag +
                                      " but holds CUDA kernels (__global__): use ```cuda as its opening line "
                                      "(NVRTC compiles only the ```cuda block).",
                                  b.fenceLine));
        } else if (isPythonLikeTag(b.tag) && mentionsForward(b.content)) {
            return fail(makeError("wrong_language_tag",
                                  "the code block at line " + std::to_string(b.fenceLine) + " is tagged ```" + b.tag +
                                      ": use ```python as its opening line for the block with def forward.",
                                  b.fenceLine));
        } else if (b.tag.empty() && (mentionsKernel(b.content) || mentionsForward(b.content))) {
            bool kernel = mentionsKernel(b.content);
            return fail(makeError("untagged_block",
                                  "the code block at line " + std::to_string(b.fenceLine) +
                                      " has no language tag. It holds " +
                                      (kernel ? "CUDA kernels (__global__), so open it with ```cuda"
                                              : "def forward, so open it with ```python") +
                                      " instead of a bare ```.",
                                  b.fenceLine));
        } else {
            ignored.push_back("```" + (b.tag.empty() ? std::string("(untagged)") : b.tag) + " at line " +
                              std::to_string(b.fenceLine));
        }
    }

    auto duplicate = [&](const std::vector<const Block*>& v, const std::string& kind, const std::string& advice) {
        std::vector<int> at;
        for (const Block* b : v)
            at.push_back(b->fenceLine);
        return makeError("duplicate_block",
                         "the answer has " + std::to_string(v.size()) + " ```" + kind + " blocks (lines " +
                             joinLines(at) + "); " + advice,
                         v[1]->fenceLine);
    };
    if (cudaBlocks.size() > 1)
        return fail(duplicate(cudaBlocks, "cuda",
                              "it must have at most one: put all device code in a single ```cuda block, once."));
    if (pythonBlocks.size() > 1)
        return fail(duplicate(pythonBlocks, "python",
                              "it must have exactly one: put def forward and its helpers in a single ```python block, "
                              "once (no usage examples or tests)."));

    ParsedCandidate& c = r.candidate;
    if (!cudaBlocks.empty()) {
        c.hasCuda = true;
        c.cuda = cudaBlocks[0]->content;
        c.cudaLine = cudaBlocks[0]->fenceLine + 1;
    }
    std::vector<FoundKernel> allKernels = scanKernels(c.cuda);
    for (const FoundKernel& k : allKernels)
        if (!k.isTemplate)
            c.kernels.push_back(k.decl);

    if (pythonBlocks.empty()) {
        std::string msg = "the answer has no ```python block. It needs exactly one block opened by a line ```python "
                          "that defines def forward(...)";
        if (!expected.empty())
            msg += " as " + formatSignature(expected);
        msg += ", and launches the kernels with kb.launch(\"name\", [grid], [block], args...).";
        if (c.hasCuda)
            msg += " The ```cuda block alone is not enough: nothing launches its kernels.";
        if (!ignored.empty())
            msg += " Ignored blocks: " + joinNames(ignored, ", ") + ".";
        return fail(makeError("no_python_block", msg, 0));
    }
    c.python = pythonBlocks[0]->content;
    c.pythonLine = pythonBlocks[0]->fenceLine + 1;
    auto answerLine = [&](int pythonLine) { return c.pythonLine + pythonLine - 1; };

    ForwardScan fwd = scanForward(c.python);
    if (!fwd.found) {
        std::string msg = "the ```python block (line " + std::to_string(pythonBlocks[0]->fenceLine) +
                          ") defines no top-level def forward(...).";
        if (fwd.nestedLine)
            msg += " The def forward at line " + std::to_string(answerLine(fwd.nestedLine)) +
                   " is indented (a method of a class or a nested function).";
        if (fwd.classLine)
            msg += " This format takes no nn.Module class (class " + fwd.className + " at line " +
                   std::to_string(answerLine(fwd.classLine)) + "): write a plain function at column 0.";
        if (c.python.find("load_inline") != std::string::npos || c.python.find("cpp_extension") != std::string::npos)
            msg += " Do not use load_inline or cpp_extension: put the device code in the ```cuda block and launch "
                   "it with kb.launch.";
        msg += expected.empty() ? std::string(" Write def forward(...) with the reference's parameters.")
                                : " Write: " + formatSignature(expected) + " -> Tensor:";
        return fail(makeError("missing_forward", msg,
                              fwd.nestedLine ? answerLine(fwd.nestedLine) : pythonBlocks[0]->fenceLine));
    }
    if (!fwd.error.empty())
        return fail(makeError("missing_forward",
                              fwd.error + " (answer line " + std::to_string(answerLine(fwd.line)) + ").",
                              answerLine(fwd.line)));
    c.forwardSignature = fwd.params;
    if (!expected.empty() && !sameSignature(expected, fwd.params))
        return fail(makeError("signature_mismatch", signatureMismatch(expected, fwd.params, answerLine(fwd.line)),
                              answerLine(fwd.line)));

    c.launches = findLaunches(c.python);
    std::vector<std::string> launchable;
    for (const KernelDecl& k : c.kernels)
        if (k.externC)
            launchable.push_back(k.name);
    std::unordered_map<std::string, const FoundKernel*> kernelByName; // scanKernels' names are unique
    for (const FoundKernel& k : allKernels)
        kernelByName.emplace(k.decl.name, &k);
    for (const LaunchSite& s : c.launches) {
        if (s.kernel.empty())
            continue; // not a literal: checked when it runs
        const int at = answerLine(s.line);
        const std::string call = s.smem ? "kb.launch_smem" : "kb.launch";
        const auto byName = kernelByName.find(s.kernel);
        const FoundKernel* k = byName == kernelByName.end() ? nullptr : byName->second;
        if (k && k->isTemplate)
            return fail(makeError("not_extern_c",
                                  "the kernel \"" + s.kernel + "\" (line " +
                                      std::to_string(c.cudaLine + k->decl.line - 1) + ") is a template, launched by " +
                                      call + " at line " + std::to_string(at) +
                                      ". Only extern \"C\" kernels can be found by name, and they cannot be templates: "
                                      "write extern \"C\" __global__ void " +
                                      s.kernel + "(...) with concrete types (e.g. float).",
                                  c.cudaLine + k->decl.line - 1));
        if (k && !k->decl.externC)
            return fail(makeError("not_extern_c",
                                  "the kernel \"" + s.kernel + "\" (line " +
                                      std::to_string(c.cudaLine + k->decl.line - 1) + ") is launched by " + call +
                                      " at line " + std::to_string(at) +
                                      " but is declared without extern \"C\", so its compiled name is C++-mangled and "
                                      "cannot be found. Declare it as extern \"C\" __global__ void " +
                                      s.kernel + "(...).",
                                  c.cudaLine + k->decl.line - 1));
        if (!k) {
            std::string msg = call + " at line " + std::to_string(at) + " names the kernel \"" + s.kernel + "\", but ";
            if (!c.hasCuda)
                msg += "the answer has no ```cuda block. Put the kernel in one ```cuda block as extern \"C\" "
                       "__global__ void " +
                       s.kernel + "(...), or compute without it.";
            else if (launchable.empty())
                msg += "the ```cuda block declares no extern \"C\" __global__ kernel. Declare it as extern \"C\" "
                       "__global__ void " +
                       s.kernel + "(...).";
            else
                msg += "the ```cuda block declares no extern \"C\" __global__ kernel with that name. Kernels it "
                       "declares: " +
                       joinNames(launchable, ", ") + ". Use one of these names exactly (case-sensitive).";
            return fail(makeError("unknown_kernel", msg, at));
        }
    }
    r.ok = true;
    return r;
}

} // namespace kwb
