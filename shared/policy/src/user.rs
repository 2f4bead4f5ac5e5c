//! The user-owned policy file: `policy.json` in our config
//! dir (`~/.config/kijito-qa/`, next to `config.json`). It removes default
//! rules, sets the consent risk per rule and adds rules of three kinds: a
//! program with argument patterns, an MCP tool-name pattern, a path prefix
//! whose writes are core-config. Pure: [`UserPolicy::parse`] takes the
//! bytes that `kijito_files::config::read_user_policy` read (owner-only,
//! not a symlink, the user's own, bounded); [`crate::classify()`] applies the
//! policy in [`crate::Env::user_policy`]. A write to the file itself is
//! core-config (`user_policy_write`) and a `tripwire_config_write`, so the
//! agent cannot edit it.
//!
//! ```json
//! {
//!   "schema": "kijito-qa.policy/v1",
//!   "remove": ["rm_files"],
//!   "risk": {"git_reset_hard": "high"},
//!   "add": [
//!     {"name": "make_deploy", "class": "send", "risk": "high", "program": "make", "args": ["deploy*"]},
//!     {"name": "jira_transition", "class": "public-post", "risk": "medium", "mcp_tool": "mcp__jira__transition_*"},
//!     {"name": "infra_repo", "risk": "high", "path_prefix": "~/infra"}
//!   ]
//! }
//! ```
//!
//! Every key is optional except `schema`; unknown keys are refused. Rules are
//! named by the `rule` ids the classifier reports ([`crate::classify::RULES`]);
//! only irreversible rules can be removed or re-risked (a removed rule's
//! call becomes a `write`, `user_rule_removed`, which the halting modes
//! still deny). Patterns are shell globs (`*`, `?`, `[...]`; `*` does not
//! cross `/`): `program` matches the program's base name (its whole path when
//! the pattern holds a `/`), after the wrappers the classifier reads through
//! (`sudo make deploy` is `make deploy`); each of `args` must match some
//! argument; `mcp_tool` matches the whole tool name `mcp__<server>__<tool>`.
//! `path_prefix` is absolute or `~/...`; its rules are always core-config.

use crate::classify::{self, Class, Risk};
use kijito_protocol::codes::policy as codes;
use kijito_protocol::error::{Error, Result};
use serde_json::{Map, Value};
use std::sync::Mutex;

/// The file's name in our config dir.
pub const USER_POLICY_FILE: &str = "policy.json";
/// The `schema` value.
pub const SCHEMA: &str = "kijito-qa.policy/v1";
/// Most rules one file adds.
pub const MAX_ADDED_RULES: usize = 256;
/// Most argument patterns of one rule.
pub const MAX_ARG_PATTERNS: usize = 16;
/// Longest rule name.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest pattern or prefix.
pub const MAX_PATTERN_CHARS: usize = 512;
/// Distinct added-rule names one process keeps (see [`intern`]).
const MAX_INTERNED: usize = 4096;

/// What an added rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    /// A program (glob on the base name, or on the path when it holds `/`)
    /// and argument globs, each matching some argument.
    Program { program: String, args: Vec<String> },
    /// A glob on the whole MCP tool name.
    McpTool(String),
    /// Writes under this path (absolute or `~/...`): core-config.
    PathPrefix(String),
}

/// One rule the user added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRule {
    pub name: &'static str,
    pub class: Class,
    pub risk: Risk,
    pub matcher: Matcher,
}

/// A parsed, validated user policy (empty: the defaults apply unchanged).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserPolicy {
    removed: Vec<&'static str>,
    risks: Vec<(&'static str, Risk)>,
    added: Vec<UserRule>,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(codes::USER_POLICY_INVALID, format!("user policy file: {}", msg.into()))
}

fn rule_invalid(msg: impl Into<String>) -> Error {
    Error::new(codes::USER_RULE_INVALID, format!("user policy file: {}", msg.into()))
}

/// Added rule names live as long as the process (a [`crate::Hit`] names its
/// rule by `&'static str`): each distinct name is kept once, at most
/// [`MAX_INTERNED`] of them.
fn intern(name: &str) -> Result<&'static str> {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return Ok(n);
    }
    if names.len() >= MAX_INTERNED {
        return Err(rule_invalid(format!("more than {MAX_INTERNED} distinct rule names in this process")));
    }
    let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.push(kept);
    Ok(kept)
}

/// A default irreversible rule, by id.
fn default_irreversible(id: &str) -> Result<&'static str> {
    match classify::RULES.iter().find(|(r, _, _)| *r == id) {
        Some((r, c, _)) if c.is_irreversible() => Ok(r),
        Some(_) => Err(Error::new(
            codes::USER_RULE_UNKNOWN,
            format!("user policy file: {id:?} is not an irreversible rule (only those can be removed or re-risked)"),
        )),
        None => {
            Err(Error::new(codes::USER_RULE_UNKNOWN, format!("user policy file: no rule is named {:?}", kijito_protocol::ids::clip(id))))
        }
    }
}

fn text<'a>(v: &'a Value, what: &str) -> Result<&'a str> {
    v.as_str().ok_or_else(|| invalid(format!("{what} must be a string")))
}

fn pattern(v: &Value, what: &str) -> Result<String> {
    let p = text(v, what)?;
    if p.is_empty() || p.chars().count() > MAX_PATTERN_CHARS || p.chars().any(char::is_control) {
        return Err(rule_invalid(format!("{what} must be 1 to {MAX_PATTERN_CHARS} characters without control characters")));
    }
    Ok(p.to_owned())
}

fn risk(v: &Value, what: &str) -> Result<Risk> {
    Risk::parse(text(v, what)?).map_err(|_| rule_invalid(format!("{what} must be low, medium or high")))
}

fn only_keys(obj: &Map<String, Value>, keys: &[&str], what: &str) -> Result<()> {
    match obj.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(invalid(format!("unknown key {:?} in {what} (known: {})", kijito_protocol::ids::clip(k), keys.join(", ")))),
        None => Ok(()),
    }
}

impl UserPolicy {
    /// Parse and validate the file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<UserPolicy> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| invalid(format!("not valid JSON: {e}")))?;
        let obj = value.as_object().ok_or_else(|| invalid("must be a JSON object"))?;
        only_keys(obj, &["schema", "remove", "risk", "add"], "the file")?;
        match obj.get("schema") {
            Some(Value::String(s)) if s == SCHEMA => {}
            _ => return Err(invalid(format!("\"schema\" must be {SCHEMA:?}"))),
        }
        let mut out = UserPolicy::default();
        if let Some(v) = obj.get("remove") {
            let list = v.as_array().ok_or_else(|| invalid("\"remove\" must be a list of rule names"))?;
            for item in list {
                let id = default_irreversible(text(item, "a \"remove\" entry")?)?;
                if !out.removed.contains(&id) {
                    out.removed.push(id);
                }
            }
        }
        if let Some(v) = obj.get("risk") {
            let map = v.as_object().ok_or_else(|| invalid("\"risk\" must be an object of rule name to low|medium|high"))?;
            for (name, level) in map {
                let id = default_irreversible(name)?;
                if out.removed.contains(&id) {
                    return Err(rule_invalid(format!("{id} is both removed and given a risk")));
                }
                out.risks.push((id, risk(level, &format!("the risk of {id}"))?));
            }
        }
        if let Some(v) = obj.get("add") {
            let list = v.as_array().ok_or_else(|| invalid("\"add\" must be a list of rules"))?;
            if list.len() > MAX_ADDED_RULES {
                return Err(rule_invalid(format!("more than {MAX_ADDED_RULES} added rules")));
            }
            for item in list {
                let rule = UserPolicy::added_rule(item)?;
                if out.added.iter().any(|r| r.name == rule.name) {
                    return Err(rule_invalid(format!("the rule {} is added twice", rule.name)));
                }
                out.added.push(rule);
            }
        }
        Ok(out)
    }

    fn added_rule(item: &Value) -> Result<UserRule> {
        let obj = item.as_object().ok_or_else(|| invalid("an \"add\" entry must be an object"))?;
        only_keys(obj, &["name", "class", "risk", "program", "args", "mcp_tool", "path_prefix"], "an \"add\" entry")?;
        let name = text(obj.get("name").ok_or_else(|| rule_invalid("an added rule needs a \"name\""))?, "\"name\"")?;
        let snake = !name.is_empty()
            && name.len() <= MAX_NAME_CHARS
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !snake {
            return Err(rule_invalid(format!(
                "rule name {:?} must be snake_case, at most {MAX_NAME_CHARS} characters",
                kijito_protocol::ids::clip(name)
            )));
        }
        if classify::rule(name).is_some() {
            return Err(rule_invalid(format!("{name} is a default rule's name (change its risk under \"risk\" instead)")));
        }
        let matchers = ["program", "mcp_tool", "path_prefix"].iter().filter(|k| obj.contains_key(**k)).count();
        if matchers != 1 {
            return Err(rule_invalid(format!("the rule {name} needs exactly one of \"program\", \"mcp_tool\", \"path_prefix\"")));
        }
        let matcher = if let Some(p) = obj.get("program") {
            let args = match obj.get("args") {
                None => Vec::new(),
                Some(Value::Array(a)) if a.len() <= MAX_ARG_PATTERNS => {
                    a.iter().map(|v| pattern(v, "an \"args\" pattern")).collect::<Result<_>>()?
                }
                Some(_) => return Err(rule_invalid(format!("\"args\" of {name} must be a list of at most {MAX_ARG_PATTERNS} patterns"))),
            };
            Matcher::Program { program: pattern(p, "\"program\"")?, args }
        } else if obj.contains_key("args") {
            return Err(rule_invalid(format!("\"args\" of {name} needs \"program\"")));
        } else if let Some(p) = obj.get("mcp_tool") {
            Matcher::McpTool(pattern(p, "\"mcp_tool\"")?)
        } else {
            let p = pattern(obj.get("path_prefix").unwrap_or(&Value::Null), "\"path_prefix\"")?;
            if !(p.starts_with('/') || p.starts_with("~/")) || p.split('/').any(|c| c == "..") {
                return Err(rule_invalid(format!("\"path_prefix\" of {name} must be absolute or ~/..., without ..")));
            }
            Matcher::PathPrefix(p)
        };
        let class = match (obj.get("class"), &matcher) {
            (None, Matcher::PathPrefix(_)) => Class::CoreConfig,
            (None, _) => return Err(rule_invalid(format!("the rule {name} needs a \"class\""))),
            (Some(c), m) => {
                let c = Class::parse(text(c, "\"class\"")?).filter(|c| c.is_irreversible()).ok_or_else(|| {
                    rule_invalid(format!("the class of {name} must be one of delete, send, public-post, wallet-transfer, core-config"))
                })?;
                if matches!(m, Matcher::PathPrefix(_)) && c != Class::CoreConfig {
                    return Err(rule_invalid(format!("a \"path_prefix\" rule ({name}) is core-config")));
                }
                c
            }
        };
        let risk = risk(
            obj.get("risk").ok_or_else(|| rule_invalid(format!("the rule {name} needs a \"risk\"")))?,
            &format!("the risk of {name}"),
        )?;
        Ok(UserRule { name: intern(name)?, class, risk, matcher })
    }

    /// What the hook read: `Ok(None)` (no file) is the empty policy; a read
    /// error stays an error (the caller fails closed on it).
    pub fn load(read: Result<Option<Vec<u8>>>) -> Result<UserPolicy> {
        match read? {
            None => Ok(UserPolicy::default()),
            Some(bytes) => UserPolicy::parse(&bytes),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.risks.is_empty() && self.added.is_empty()
    }

    pub fn removed(&self) -> &[&'static str] {
        &self.removed
    }

    pub fn added(&self) -> &[UserRule] {
        &self.added
    }

    /// The user's risk for a rule id (a re-risked default or an added rule).
    pub fn risk_of(&self, id: &str) -> Option<Risk> {
        self.risks.iter().find(|(r, _)| *r == id).map(|(_, k)| *k).or_else(|| self.added.iter().find(|r| r.name == id).map(|r| r.risk))
    }

    /// Added program rules that `argv` (after wrappers) matches.
    pub(crate) fn program_hits<'a>(&'a self, argv: &'a [String]) -> impl Iterator<Item = &'a UserRule> + 'a {
        let first = argv.first().map(String::as_str).unwrap_or("");
        let base = first.rsplit('/').next().unwrap_or(first);
        self.added.iter().filter(move |r| match &r.matcher {
            Matcher::Program { program, args } => {
                let subject = if program.contains('/') { first } else { base };
                glob(program, subject) && args.iter().all(|a| argv[1..].iter().any(|w| glob(a, w)))
            }
            _ => false,
        })
    }

    /// Added MCP rules that the tool name matches.
    pub(crate) fn mcp_hits<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a UserRule> + 'a {
        self.added.iter().filter(move |r| matches!(&r.matcher, Matcher::McpTool(p) if glob(p, tool)))
    }

    /// Added path rules whose prefix holds `abs` (`resolve` gives the
    /// prefix's absolute form).
    pub(crate) fn path_hits<'a>(&'a self, abs: &'a str, resolve: impl Fn(&str) -> String + 'a) -> impl Iterator<Item = &'a UserRule> + 'a {
        self.added.iter().filter(move |r| match &r.matcher {
            Matcher::PathPrefix(p) => {
                let dir = resolve(p);
                let dir = dir.trim_end_matches('/');
                dir.is_empty() || abs == dir || abs.starts_with(&format!("{dir}/"))
            }
            _ => false,
        })
    }
}

fn glob(pattern: &str, text: &str) -> bool {
    kijito_protocol::command::glob_match(pattern.as_bytes(), text.as_bytes())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn code(text: &str) -> String {
        UserPolicy::parse(text.as_bytes()).unwrap_err().code().to_owned()
    }

    #[test]
    fn a_full_file_parses() {
        let p = UserPolicy::parse(
            br#"{"schema":"kijito-qa.policy/v1","remove":["rm_files","rm_files"],"risk":{"git_reset_hard":"high"},
            "add":[{"name":"make_deploy","class":"send","risk":"high","program":"make","args":["deploy*"]},
                   {"name":"jira_transition","class":"public-post","risk":"medium","mcp_tool":"mcp__jira__transition_*"},
                   {"name":"infra_repo","risk":"low","path_prefix":"~/infra"}]}"#,
        )
        .unwrap();
        assert_eq!(p.removed(), ["rm_files"]);
        assert_eq!(p.risk_of("git_reset_hard"), Some(Risk::High));
        assert_eq!(p.risk_of("make_deploy"), Some(Risk::High));
        assert_eq!(p.risk_of("rm_recursive_force"), None);
        assert_eq!(p.added().len(), 3);
        assert_eq!(p.added()[2].class, Class::CoreConfig);
        assert_eq!(p.added()[1].matcher, Matcher::McpTool("mcp__jira__transition_*".into()));
        assert!(!p.is_empty());
        assert!(UserPolicy::parse(br#"{"schema":"kijito-qa.policy/v1"}"#).unwrap().is_empty());
        assert!(UserPolicy::load(Ok(None)).unwrap().is_empty());
        let e = UserPolicy::load(Err(Error::new(kijito_files::private::codes::SYMLINK, "x"))).unwrap_err();
        assert_eq!(e.code(), "file_is_symlink");
    }

    #[test]
    fn every_refusal_has_its_code() {
        let s = |rest: &str| format!(r#"{{"schema":"kijito-qa.policy/v1"{rest}}}"#);
        assert_eq!(code("not json"), codes::USER_POLICY_INVALID.as_str());
        assert_eq!(code("[]"), codes::USER_POLICY_INVALID.as_str());
        assert_eq!(code(r#"{"schema":"kijito-qa.policy/v2"}"#), codes::USER_POLICY_INVALID.as_str());
        assert_eq!(code(&s(r#","enforce":true"#)), codes::USER_POLICY_INVALID.as_str());
        assert_eq!(code(&s(r#","remove":"rm_files""#)), codes::USER_POLICY_INVALID.as_str());
        assert_eq!(code(&s(r#","remove":["rm_everything"]"#)), codes::USER_RULE_UNKNOWN.as_str());
        // Only irreversible rules: removing a read rule means nothing.
        assert_eq!(code(&s(r#","remove":["shell_read"]"#)), codes::USER_RULE_UNKNOWN.as_str());
        assert_eq!(code(&s(r#","risk":{"rm_files":"extreme"}"#)), codes::USER_RULE_INVALID.as_str());
        assert_eq!(code(&s(r#","remove":["rm_files"],"risk":{"rm_files":"low"}"#)), codes::USER_RULE_INVALID.as_str());
        let add = |rule: &str| code(&s(&format!(r#","add":[{rule}]"#)));
        assert_eq!(add(r#"{"name":"Bad-Name","class":"send","risk":"low","program":"x"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"rm_files","class":"send","risk":"low","program":"x"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","class":"send","risk":"low"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","class":"send","risk":"low","program":"x","mcp_tool":"y"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","class":"write","risk":"low","program":"x"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","risk":"low","program":"x"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","class":"send","program":"x"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","class":"send","risk":"low","mcp_tool":"x","args":["y"]}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","class":"send","risk":"low","path_prefix":"/x"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","risk":"low","path_prefix":"x/y"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","risk":"low","path_prefix":"/x/../y"}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","class":"send","risk":"low","program":""}"#), codes::USER_RULE_INVALID.as_str());
        assert_eq!(add(r#"{"name":"a","class":"send","risk":"low","program":"x","colour":"red"}"#), codes::USER_POLICY_INVALID.as_str());
        let args = format!("[{}]", vec!["\"a\""; MAX_ARG_PATTERNS + 1].join(","));
        assert_eq!(
            add(&format!(r#"{{"name":"a","class":"send","risk":"low","program":"x","args":{args}}}"#)),
            codes::USER_RULE_INVALID.as_str()
        );
        let twice = r#"{"name":"a","class":"send","risk":"low","program":"x"}"#;
        assert_eq!(code(&s(&format!(r#","add":[{twice},{twice}]"#))), codes::USER_RULE_INVALID.as_str());
        let many = vec![r#"{"name":"a","class":"send","risk":"low","program":"x"}"#; MAX_ADDED_RULES + 1].join(",");
        assert_eq!(code(&s(&format!(r#","add":[{many}]"#))), codes::USER_RULE_INVALID.as_str());
    }

    /// The bounds are inclusive: a pattern of exactly 512 characters, a rule
    /// name of exactly 64 and exactly 256 added rules parse; one more, a
    /// control character, or a name off snake_case is refused.
    #[test]
    fn bounds_and_names_at_their_edges() {
        let file = |rules: &[String]| format!(r#"{{"schema":"kijito-qa.policy/v1","add":[{}]}}"#, rules.join(","));
        let rule = |name: &str, program: &str| format!(r#"{{"name":"{name}","class":"send","risk":"low","program":"{program}"}}"#);
        let long = "p".repeat(MAX_PATTERN_CHARS);
        let got = UserPolicy::parse(file(&[rule("a", &long)]).as_bytes()).unwrap();
        assert_eq!(got.added()[0].matcher, Matcher::Program { program: long.clone(), args: vec![] });
        assert_eq!(code(&file(&[rule("a", &format!("{long}p"))])), codes::USER_RULE_INVALID.as_str());
        assert_eq!(code(&file(&[rule("a", "make\\u0007")])), codes::USER_RULE_INVALID.as_str());
        let name = "n".repeat(MAX_NAME_CHARS);
        assert_eq!(UserPolicy::parse(file(&[rule(&name, "x")]).as_bytes()).unwrap().added()[0].name, name);
        for bad in ["n".repeat(MAX_NAME_CHARS + 1), "9lives".into(), "a-b".into(), "aB".into(), String::new()] {
            assert_eq!(code(&file(&[rule(&bad, "x")])), codes::USER_RULE_INVALID.as_str(), "{bad:?}");
        }
        let most: Vec<String> = (0..MAX_ADDED_RULES).map(|i| rule(&format!("r{i}"), "x")).collect();
        assert_eq!(UserPolicy::parse(file(&most).as_bytes()).unwrap().added().len(), MAX_ADDED_RULES);
    }

    /// A file with only removals, only risks or only added rules is not the
    /// empty policy (the classifier skips an empty one).
    #[test]
    fn any_one_part_makes_the_policy_non_empty() {
        for part in [
            r#""remove":["rm_files"]"#,
            r#""risk":{"git_reset_hard":"high"}"#,
            r#""add":[{"name":"a","class":"send","risk":"low","program":"x"}]"#,
        ] {
            let p = UserPolicy::parse(format!(r#"{{"schema":"kijito-qa.policy/v1",{part}}}"#).as_bytes()).unwrap();
            assert!(!p.is_empty(), "{part}");
        }
    }

    #[test]
    fn matchers() {
        let p = UserPolicy::parse(
            br#"{"schema":"kijito-qa.policy/v1","add":[
            {"name":"deploy_prod","class":"send","risk":"high","program":"deploy*","args":["--env=prod*","-y"]},
            {"name":"local_tool","class":"delete","risk":"low","program":"/opt/tools/*"},
            {"name":"chat_post","class":"public-post","risk":"medium","mcp_tool":"mcp__chat__*"},
            {"name":"infra_repo","risk":"low","path_prefix":"~/infra/"}]}"#,
        )
        .unwrap();
        let argv = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let names = |it: Vec<&UserRule>| it.iter().map(|r| r.name).collect::<Vec<_>>();
        assert_eq!(names(p.program_hits(&argv(&["/usr/bin/deploy-app", "-y", "--env=prod-eu"])).collect()), ["deploy_prod"]);
        assert!(p.program_hits(&argv(&["deploy-app", "--env=prod-eu"])).next().is_none());
        assert!(p.program_hits(&argv(&["deploy-app", "-y", "--env=staging"])).next().is_none());
        assert_eq!(names(p.program_hits(&argv(&["/opt/tools/wipe"])).collect()), ["local_tool"]);
        assert!(p.program_hits(&argv(&["wipe"])).next().is_none());
        assert!(p.program_hits(&[]).next().is_none());
        assert_eq!(names(p.mcp_hits("mcp__chat__say").collect()), ["chat_post"]);
        assert!(p.mcp_hits("mcp__chatter__say").next().is_none());
        let home = |s: &str| s.replacen('~', "/home/u", 1);
        assert_eq!(names(p.path_hits("/home/u/infra/main.tf", home).collect()), ["infra_repo"]);
        assert_eq!(names(p.path_hits("/home/u/infra", home).collect()), ["infra_repo"]);
        assert!(p.path_hits("/home/u/infrastructure/x", home).next().is_none());
    }
}
