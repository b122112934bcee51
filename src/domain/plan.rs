//! Plan validation (pure): the DAG rules of CONTRACT.md "Parameters"; the placeholder grammar
//! is `placeholder`, re-exported here.
//!
//! Placeholders: `${step_1}`, `${step_1.output}`, `${step_1.output.a.b}` (a previous step's output),
//! `${metadata.key}` (runtime metadata, then task metadata) and `{{action_1_1.output}}` (an action
//! of the same step). Paths may index arrays with numbers (`items.0.name`). In a map step's
//! parameters, `${item}` (or the map's `as` name, `${item.a.b}`) and `${item_index}` read the
//! item an item step runs with.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::model::{MapSpec, PlanSpec, StepSpec};
pub use super::placeholder::{
    ITEM_INDEX, PlanError, Reference, Segment, parse_template, parse_template_in, references,
    references_in,
};
use super::placeholder::{err, leading_form, resolvable, valid_key};

/// The most steps a plan can have whatever the configuration (`[limits] max_steps_per_plan`, at
/// most this, is checked by the API).
pub const MAX_STEPS: usize = 100_000;

/// Step ids a placeholder's first name would read as something else.
pub const RESERVED_STEP_IDS: &[&str] = &["metadata", "context", "input"];

/// What `[limits]` holds every plan to, wherever it comes from (a client, a template, a child
/// task's call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// `[limits] max_steps_per_plan`.
    pub max_steps: usize,
    /// `[limits] max_map_items`: the largest `map.max_items`.
    pub max_map_items: u32,
}

/// A plan within `b`: no more steps than `max_steps`, no map asking for more than
/// `max_map_items` items. The message names the limit.
pub fn check_bounds(plan: &PlanSpec, b: Bounds) -> Result<(), PlanError> {
    if plan.steps.len() > b.max_steps {
        return err(format!(
            "the plan has {} steps; at most {} are allowed ([limits] max_steps_per_plan)",
            plan.steps.len(),
            b.max_steps
        ));
    }
    for s in &plan.steps {
        if let Some(n) = s.map.as_ref().and_then(|m| m.max_items)
            && n > b.max_map_items
        {
            return err(format!(
                "step {:?}: map.max_items is {n}; at most {} are allowed ([limits] max_map_items)",
                s.id, b.max_map_items
            ));
        }
    }
    Ok(())
}

/// The most items a map runs: its `max_items`, else `[limits] max_steps_per_plan`, and never
/// more than `[limits] max_map_items` (a plan made before the limit, or by a brain, is held to
/// it too). With the setting that bounds it, for the failure's message.
pub fn map_item_limit(max_items: Option<u32>, b: Bounds) -> (usize, &'static str) {
    let ceiling = b.max_map_items as usize;
    match max_items {
        Some(m) if (m as usize) <= ceiling => (m as usize, "map.max_items"),
        None if b.max_steps <= ceiling => (b.max_steps, "[limits] max_steps_per_plan"),
        _ => (ceiling, "[limits] max_map_items"),
    }
}

/// Validate a submitted plan against the known tool ids. Pure: no I/O.
pub fn validate(plan: &PlanSpec, known_tools: &HashSet<String>) -> Result<(), PlanError> {
    if plan.steps.is_empty() {
        return err("plan.steps is empty: a plan needs at least one step");
    }
    if plan.steps.len() > MAX_STEPS {
        return err(format!(
            "plan has {} steps; at most {MAX_STEPS} are allowed",
            plan.steps.len()
        ));
    }
    let index = step_index(plan)?;
    for step in &plan.steps {
        validate_step_shape(step, known_tools)?;
        let mut seen = HashSet::new();
        for dep in &step.dependencies {
            if dep == &step.id {
                return err(format!("step {:?} depends on itself", step.id));
            }
            if !index.contains_key(dep.as_str()) {
                return err(format!(
                    "step {:?} depends on unknown step {dep:?}",
                    step.id
                ));
            }
            if !seen.insert(dep) {
                return err(format!("step {:?} lists dependency {dep:?} twice", step.id));
            }
        }
    }
    let ancestors = ancestors(plan)?;
    for step in &plan.steps {
        let deps = &ancestors[step.id.as_str()];
        let action_ids: HashSet<&str> = step.actions.iter().map(|a| a.id.as_str()).collect();
        let item = match &step.map {
            Some(m) => {
                validate_map(step, m, deps, &index)?;
                Some(m.item_name.as_str())
            }
            None => None,
        };
        let own = resolvable(&step.tool, &step.parameters);
        for r in references_in(&own, item).map_err(|e| in_step(step, e))? {
            check_reference(step, &r, deps, &index, Some(&action_ids))?;
        }
        for action in &step.actions {
            for r in references(&action.parameters).map_err(|e| in_step(step, e))? {
                check_reference(step, &r, deps, &index, None)?;
            }
        }
    }
    Ok(())
}

/// Each step's position by id: ids valid, not reserved, not repeated.
fn step_index(plan: &PlanSpec) -> Result<HashMap<&str, usize>, PlanError> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if !valid_key(&step.id) {
            return err(format!(
                "step id {:?} is invalid: use 1-64 letters, digits, '_' or '-'",
                step.id
            ));
        }
        if RESERVED_STEP_IDS.contains(&step.id.as_str()) {
            return err(format!(
                "step id {:?} is reserved for ${{{}.…}} placeholders",
                step.id, step.id
            ));
        }
        if index.insert(step.id.as_str(), i).is_some() {
            return err(format!("duplicate step id {:?}", step.id));
        }
    }
    Ok(index)
}

/// Each step's transitive dependencies, computed in topological order (a cycle is an error).
fn ancestors(plan: &PlanSpec) -> Result<HashMap<&str, BTreeSet<&str>>, PlanError> {
    let order = topological_order(plan)?;
    let mut ancestors: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for &i in &order {
        let step = &plan.steps[i];
        let mut set = BTreeSet::new();
        for dep in &step.dependencies {
            set.insert(dep.as_str());
            if let Some(a) = ancestors.get(dep.as_str()) {
                set.extend(a.iter().copied());
            }
        }
        ancestors.insert(step.id.as_str(), set);
    }
    Ok(ancestors)
}

/// A map step: `over` is one placeholder of a dependency's output, the context or the
/// metadata; `max_items` is set when it reads an output; the item's name reads as nothing
/// else; a map runs one tool, without actions.
fn validate_map(
    step: &StepSpec,
    m: &MapSpec,
    deps: &BTreeSet<&str>,
    index: &HashMap<&str, usize>,
) -> Result<(), PlanError> {
    let id = &step.id;
    if !valid_key(&m.item_name) {
        return err(format!(
            "step {id:?}: map.as {:?} is invalid: use 1-64 letters, digits, '_' or '-'",
            m.item_name
        ));
    }
    if m.item_name == ITEM_INDEX
        || RESERVED_STEP_IDS.contains(&m.item_name.as_str())
        || index.contains_key(m.item_name.as_str())
    {
        return err(format!(
            "step {id:?}: map.as {:?} would read as ${{{}}}, which means something else; choose another name",
            m.item_name, m.item_name
        ));
    }
    if !step.actions.is_empty() {
        return err(format!(
            "step {id:?}: a map step runs one tool per item and cannot have actions"
        ));
    }
    if m.max_parallel == Some(0) || m.max_items == Some(0) {
        return err(format!(
            "step {id:?}: map.max_parallel and map.max_items must be at least 1"
        ));
    }
    let segments = parse_template(&m.over).map_err(|e| in_step(step, e))?;
    let reference = match segments.as_slice() {
        [Segment::Ref { reference, .. }] => reference,
        _ => {
            return err(format!(
                "step {id:?}: map.over must be one placeholder that resolves to a list, such as ${{a.output.items}}, ${{context.docs}} or ${{metadata.ids}}; got {:?}",
                m.over
            ));
        }
    };
    match reference {
        Reference::Step { key, .. } => {
            check_reference(step, reference, deps, index, None)?;
            if m.max_items.is_none() {
                return err(format!(
                    "step {id:?}: map.max_items is required when map.over reads a step's output ({key:?}): a step can produce any number of items"
                ));
            }
            Ok(())
        }
        Reference::Metadata { .. } | Reference::Context { .. } => Ok(()),
        _ => err(format!(
            "step {id:?}: map.over must read a dependency's output, the context or the metadata"
        )),
    }
}

fn in_step(step: &StepSpec, e: PlanError) -> PlanError {
    PlanError {
        message: format!("step {:?}: {}", step.id, e.message),
    }
}

fn validate_step_shape(step: &StepSpec, known_tools: &HashSet<String>) -> Result<(), PlanError> {
    if !step.parameters.is_object() {
        return err(format!(
            "step {:?}: parameters must be a JSON object",
            step.id
        ));
    }
    if step.tool.is_empty() {
        if step.actions.is_empty() {
            return err(format!("step {:?} has no tool and no actions", step.id));
        }
    } else if !known_tools.contains(&step.tool) {
        return err(format!(
            "step {:?} uses unknown tool {:?}",
            step.id, step.tool
        ));
    }
    let mut ids = HashSet::new();
    for action in &step.actions {
        if !valid_key(&action.id) {
            return err(format!(
                "step {:?}: action id {:?} is invalid",
                step.id, action.id
            ));
        }
        if !ids.insert(action.id.as_str()) {
            return err(format!(
                "step {:?}: duplicate action id {:?}",
                step.id, action.id
            ));
        }
        if !known_tools.contains(&action.tool) {
            return err(format!(
                "step {:?}: action {:?} uses unknown tool {:?}",
                step.id, action.id, action.tool
            ));
        }
        if !action.parameters.is_object() {
            return err(format!(
                "step {:?}: action {:?} parameters must be a JSON object",
                step.id, action.id
            ));
        }
    }
    Ok(())
}

fn check_reference(
    step: &StepSpec,
    r: &Reference,
    deps: &BTreeSet<&str>,
    index: &HashMap<&str, usize>,
    actions: Option<&HashSet<&str>>,
) -> Result<(), PlanError> {
    match r {
        Reference::Metadata { .. } | Reference::Context { .. } => Ok(()),
        Reference::Item { .. } | Reference::ItemIndex => Ok(()),
        Reference::Step { key, .. } => {
            if !index.contains_key(key.as_str()) && (key == "item" || key == ITEM_INDEX) {
                err(format!(
                    "step {:?}: placeholder refers to unknown step {key:?} (${{item}} and ${{{ITEM_INDEX}}} are read only in the parameters of a step with a map)",
                    step.id
                ))
            } else if !index.contains_key(key.as_str()) {
                // `${steps.output.s}`: a step id where the path goes
                let hint = match (key.as_str(), r) {
                    ("steps" | "step" | "needs", Reference::Step { path, .. })
                        if path.first().is_some_and(|p| index.contains_key(p.as_str())) =>
                    {
                        format!(" (write ${{{}}})", leading_form(key, path))
                    }
                    _ => String::new(),
                };
                err(format!(
                    "step {:?}: placeholder refers to unknown step {key:?}{hint}",
                    step.id
                ))
            } else if !deps.contains(key.as_str()) {
                err(format!(
                    "step {:?}: placeholder refers to step {key:?}, which is not one of its (transitive) dependencies",
                    step.id
                ))
            } else {
                Ok(())
            }
        }
        Reference::Action { id, .. } => match actions {
            None => err(format!(
                "step {:?}: actions run in parallel, so an action cannot refer to {{{{{id}.output}}}}",
                step.id
            )),
            Some(ids) if !ids.contains(id.as_str()) => err(format!(
                "step {:?}: placeholder refers to unknown action {id:?} (actions of the same step only)",
                step.id
            )),
            Some(_) => Ok(()),
        },
    }
}

/// Kahn's algorithm; ties broken by plan order. Errors name a step on a cycle.
pub fn topological_order(plan: &PlanSpec) -> Result<Vec<usize>, PlanError> {
    let index: HashMap<&str, usize> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let mut indegree: Vec<usize> = plan.steps.iter().map(|s| s.dependencies.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![vec![]; plan.steps.len()];
    for (i, s) in plan.steps.iter().enumerate() {
        for d in &s.dependencies {
            if let Some(&j) = index.get(d.as_str()) {
                dependents[j].push(i);
            }
        }
    }
    let mut ready: BTreeSet<usize> = (0..plan.steps.len())
        .filter(|&i| indegree[i] == 0)
        .collect();
    let mut order = Vec::with_capacity(plan.steps.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &j in &dependents[i] {
            indegree[j] -= 1;
            if indegree[j] == 0 {
                ready.insert(j);
            }
        }
    }
    if order.len() != plan.steps.len() {
        let on_cycle = (0..plan.steps.len())
            .find(|&i| indegree[i] > 0)
            .map(|i| plan.steps[i].id.clone())
            .unwrap_or_default();
        return err(format!(
            "plan has a dependency cycle (through step {on_cycle:?})"
        ));
    }
    Ok(order)
}

/// `from` and every step that depends on it, directly or through others.
pub fn downstream(steps: &[StepSpec], from: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::from([from.to_string()]);
    loop {
        let before = out.len();
        for s in steps {
            if s.dependencies.iter().any(|d| out.contains(d)) {
                out.insert(s.id.clone());
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn downstream_follows_dependencies_transitively_and_nothing_else() {
        let plan: PlanSpec = serde_json::from_value(serde_json::json!({"steps": [
            {"id": "a", "tool": "t"},
            {"id": "b", "tool": "t", "dependencies": ["a"]},
            {"id": "side", "tool": "t"},
            {"id": "c", "tool": "t", "dependencies": ["side", "b"]},
            {"id": "d", "tool": "t", "dependencies": ["side"]}
        ]}))
        .unwrap();
        let names = |s: BTreeSet<String>| s.into_iter().collect::<Vec<_>>();
        assert_eq!(names(downstream(&plan.steps, "b")), ["b", "c"]);
        assert_eq!(names(downstream(&plan.steps, "side")), ["c", "d", "side"]);
        assert_eq!(names(downstream(&plan.steps, "d")), ["d"]);
        assert_eq!(names(downstream(&plan.steps, "a")), ["a", "b", "c"]);
    }
    use serde_json::json;

    fn tools() -> HashSet<String> {
        ["echo", "sleep"].iter().map(|s| s.to_string()).collect()
    }

    fn plan(v: Value) -> PlanSpec {
        serde_json::from_value(v).unwrap()
    }

    fn check(v: Value) -> Result<(), PlanError> {
        validate(&plan(v), &tools())
    }

    #[test]
    fn parses_placeholders() {
        let segs = parse_template("a ${step_1.output.x.0} b {{act.output}} ${metadata.k}").unwrap();
        assert_eq!(segs.len(), 6);
        assert_eq!(
            segs[1],
            Segment::Ref {
                raw: "${step_1.output.x.0}",
                reference: Reference::Step {
                    key: "step_1".into(),
                    path: vec!["x".into(), "0".into()]
                }
            }
        );
        assert!(matches!(
            &segs[3],
            Segment::Ref { reference: Reference::Action { id, path }, .. } if id == "act" && path.is_empty()
        ));
        assert!(matches!(
            &segs[5],
            Segment::Ref { reference: Reference::Metadata { path }, .. } if path == &vec!["k".to_string()]
        ));
        assert_eq!(
            parse_template("${step_1}").unwrap()[0],
            Segment::Ref {
                raw: "${step_1}",
                reference: Reference::Step {
                    key: "step_1".into(),
                    path: vec![]
                }
            }
        );
        assert!(parse_template("${step_1").is_err());
        assert!(parse_template("${step_1.foo}").is_err());
        assert!(parse_template("${metadata}").is_err());
        assert!(parse_template("${a..b}").is_err());
        assert_eq!(parse_template("no placeholders").unwrap().len(), 1);
    }

    /// Every hint a mistaken placeholder gets names a form that works: put in its place, the
    /// plan is valid.
    #[test]
    fn every_placeholder_hint_names_a_form_that_works() {
        let step_forms = [
            "${steps.a.output}",
            "${steps.a.outputs.x}",
            "${steps.a.output.x.0}",
            "${steps.a}",
            "${step.a.result}",
            "${needs.a.outputs.x}",
            "${steps.output.a}",
            "${a.outputs.x}",
            "${a.outputs}",
            "${a.result}",
            "${a.results.x}",
            "${a.foo}",
            "${a.foo.bar}",
        ];
        let with = |x: &str| {
            json!({"steps": [
                {"id": "a", "tool": "echo"},
                {"id": "b", "tool": "echo", "dependencies": ["a"], "parameters": {"x": x}}]})
        };
        let action_forms = ["{{steps.e1.output}}", "{{e1.outputs.x}}", "{{e1.foo}}"];
        let with_action = |x: &str| {
            json!({"steps": [{"id": "e", "tool": "echo", "actions": [{"id": "e1", "tool": "echo"}],
                              "parameters": {"from_action": x}}]})
        };
        let cases = step_forms
            .iter()
            .map(|f| (f, &with as &dyn Fn(&str) -> Value))
            .chain(
                action_forms
                    .iter()
                    .map(|f| (f, &with_action as &dyn Fn(&str) -> Value)),
            );
        for (form, plan_with) in cases {
            let e = check(plan_with(form)).expect_err(form).message;
            let hint = e
                .split("(write ")
                .nth(1)
                .and_then(|h| h.strip_suffix(')'))
                .unwrap_or_else(|| panic!("{form}: no hint in {e:?}"));
            check(plan_with(hint))
                .unwrap_or_else(|e| panic!("{form}: the hint {hint} fails too: {}", e.message));
        }
    }

    /// A map step: each rule of `validate_map`, and the item placeholders, which read as the
    /// item only in a map step's parameters (under its `as` name).
    #[test]
    fn map_steps_follow_their_rules() {
        let with = |map: Value, params: Value| {
            json!({"steps": [
                {"id": "a", "tool": "echo"},
                {"id": "m", "tool": "echo", "dependencies": ["a"], "parameters": params, "map": map}]})
        };
        let ok = [
            (
                json!({"over": "${a.output.items}", "max_items": 5}),
                json!({"v": "${item}", "i": "${item_index}", "t": "n=${item.n}"}),
            ),
            (
                json!({"over": "${context.docs}", "as": "doc", "max_parallel": 2}),
                json!({"v": "${doc.title}", "i": "${item_index}", "from": "${a.output}"}),
            ),
            (json!({"over": "${metadata.ids}"}), json!({})),
        ];
        for (map, params) in ok {
            check(with(map.clone(), params.clone()))
                .unwrap_or_else(|e| panic!("{map} {params}: {}", e.message));
        }
        let bad = [
            (
                json!({"over": "${a.output.items}"}),
                json!({}),
                "map.max_items is required",
            ),
            (
                json!({"over": "${a} and ${a}", "max_items": 2}),
                json!({}),
                "one placeholder",
            ),
            (
                json!({"over": "items", "max_items": 2}),
                json!({}),
                "one placeholder",
            ),
            (
                json!({"over": "${zz.output}", "max_items": 2}),
                json!({}),
                "unknown step",
            ),
            (
                json!({"over": "${m.output}", "max_items": 2}),
                json!({}),
                "not one of its",
            ),
            (
                json!({"over": "${context.x}", "max_items": 0}),
                json!({}),
                "at least 1",
            ),
            (
                json!({"over": "${context.x}", "max_parallel": 0}),
                json!({}),
                "at least 1",
            ),
            (
                json!({"over": "${context.x}", "as": "a"}),
                json!({}),
                "choose another name",
            ),
            (
                json!({"over": "${context.x}", "as": "context"}),
                json!({}),
                "choose another name",
            ),
            (
                json!({"over": "${context.x}", "as": "item_index"}),
                json!({}),
                "choose another name",
            ),
            (
                json!({"over": "${context.x}", "as": "a b"}),
                json!({}),
                "is invalid",
            ),
            (
                json!({"over": "${context.x}"}),
                json!({"v": "${item_index.x}"}),
                "has no fields",
            ),
            // under another name, `${item}` is no longer the item
            (
                json!({"over": "${context.x}", "as": "doc"}),
                json!({"v": "${item}"}),
                "only in the parameters",
            ),
        ];
        for (map, params, says) in bad {
            let e = check(with(map.clone(), params.clone()))
                .expect_err(&format!("{map} {params}"))
                .message;
            assert!(e.contains(says), "{map} {params}: {says:?} not in {e:?}");
        }
        // outside a map step, the item placeholders name no step
        let e = check(
            json!({"steps": [{"id": "s", "tool": "echo", "parameters": {"v": "${item_index}"}}]}),
        )
        .unwrap_err()
        .message;
        assert!(
            e.contains("only in the parameters of a step with a map"),
            "{e}"
        );
        // a map runs one tool: no actions
        let e = check(
            json!({"steps": [{"id": "s", "tool": "echo", "map": {"over": "${context.x}"},
                                        "actions": [{"id": "s1", "tool": "echo"}]}]}),
        )
        .unwrap_err()
        .message;
        assert!(e.contains("cannot have actions"), "{e}");
    }

    #[test]
    fn accepts_a_valid_dag() {
        check(json!({"steps": [
            {"id": "a", "tool": "echo", "parameters": {"x": 1}},
            {"id": "b", "tool": "echo", "dependencies": ["a"], "parameters": {"y": "${a.output.x}"}},
            {"id": "c", "tool": "echo", "dependencies": ["b"], "parameters": {"z": "t=${a} ${metadata.k}"}},
            {"id": "d", "tool": "", "dependencies": ["c"], "actions": [
                {"id": "d1", "tool": "echo", "parameters": {"v": "${b.output}"}},
                {"id": "d2", "tool": "sleep", "parameters": {"ms": 1}}]},
            {"id": "e", "tool": "echo", "actions": [{"id": "e1", "tool": "echo"}],
             "parameters": {"from_action": "{{e1.output}}"}}
        ]}))
        .unwrap();
    }

    #[test]
    fn rejects_each_invalid_shape_with_a_message() {
        let cases = [
            (json!({"steps": []}), "empty"),
            (
                json!({"steps": [{"id": "a", "tool": "nope"}]}),
                "unknown tool",
            ),
            (
                json!({"steps": [{"id": "a", "tool": "echo", "dependencies": ["a"]}]}),
                "depends on itself",
            ),
            (
                json!({"steps": [{"id": "a", "tool": "echo", "dependencies": ["z"]}]}),
                "unknown step",
            ),
            (
                json!({"steps": [{"id": "a", "tool": "echo"}, {"id": "a", "tool": "echo"}]}),
                "duplicate step id",
            ),
            (
                json!({"steps": [
                {"id": "a", "tool": "echo", "dependencies": ["c"]},
                {"id": "b", "tool": "echo", "dependencies": ["a"]},
                {"id": "c", "tool": "echo", "dependencies": ["b"]}]}),
                "cycle",
            ),
            (
                json!({"steps": [
                {"id": "a", "tool": "echo"},
                {"id": "b", "tool": "echo", "parameters": {"x": "${a.output}"}}]}),
                "not one of its (transitive) dependencies",
            ),
            (
                json!({"steps": [{"id": "a", "tool": "echo", "parameters": {"x": "${zz}"}}]}),
                "unknown step",
            ),
            (
                json!({"steps": [{"id": "a", "tool": "echo", "parameters": {"x": "{{q.output}}"}}]}),
                "unknown action",
            ),
            (
                json!({"steps": [{"id": "a", "tool": "echo", "parameters": [1]}]}),
                "JSON object",
            ),
            (
                json!({"steps": [{"id": "a", "tool": ""}]}),
                "no tool and no actions",
            ),
            (json!({"steps": [{"id": "a b", "tool": "echo"}]}), "invalid"),
            (
                json!({"steps": [{"id": "metadata", "tool": "echo"}]}),
                "reserved",
            ),
            (
                json!({"steps": [{"id": "a", "tool": "echo", "actions": [
                {"id": "x", "tool": "echo"}, {"id": "x", "tool": "echo"}]}]}),
                "duplicate action",
            ),
            (
                json!({"steps": [{"id": "a", "tool": "echo", "actions": [
                {"id": "x", "tool": "echo"}, {"id": "y", "tool": "echo", "parameters": {"v": "{{x.output}}"}}]}]}),
                "cannot refer",
            ),
        ];
        for (v, needle) in cases {
            let e = check(v.clone()).expect_err(&v.to_string());
            assert!(e.message.contains(needle), "{v}: {e}");
        }
    }

    #[test]
    fn transitive_dependencies_may_be_referenced() {
        check(json!({"steps": [
            {"id": "a", "tool": "echo"},
            {"id": "b", "tool": "echo", "dependencies": ["a"]},
            {"id": "c", "tool": "echo", "dependencies": ["b"], "parameters": {"x": "${a.output}"}}
        ]}))
        .unwrap();
    }

    #[test]
    fn topological_order_follows_plan_order_on_ties() {
        let p = plan(json!({"steps": [
            {"id": "a", "tool": "echo", "dependencies": ["c"]},
            {"id": "b", "tool": "echo"},
            {"id": "c", "tool": "echo"}
        ]}));
        assert_eq!(topological_order(&p).unwrap(), vec![1, 2, 0]);
    }

    #[test]
    fn bounds_name_the_limit_a_plan_exceeds() {
        let b = Bounds {
            max_steps: 2,
            max_map_items: 100,
        };
        let map = |n: u32| {
            plan(json!({"steps": [{"id": "m", "tool": "echo",
                "map": {"over": "${context.xs}", "max_items": n}}]}))
        };
        check_bounds(&map(100), b).unwrap();
        let e = check_bounds(&map(101), b).unwrap_err();
        assert!(e.message.contains("[limits] max_map_items"), "{e}");
        assert!(e.message.contains("101"), "{e}");
        let three = plan(json!({"steps": [{"id": "a", "tool": "echo"},
            {"id": "b", "tool": "echo"}, {"id": "c", "tool": "echo"}]}));
        let e = check_bounds(&three, b).unwrap_err();
        assert!(e.message.contains("[limits] max_steps_per_plan"), "{e}");
    }

    #[test]
    fn a_maps_item_limit_never_passes_max_map_items() {
        let b = |max_steps, max_map_items| Bounds {
            max_steps,
            max_map_items,
        };
        assert_eq!(map_item_limit(Some(5), b(1000, 10)), (5, "map.max_items"));
        assert_eq!(
            map_item_limit(Some(50), b(1000, 10)),
            (10, "[limits] max_map_items")
        );
        assert_eq!(
            map_item_limit(None, b(1000, 10_000)),
            (1000, "[limits] max_steps_per_plan")
        );
        assert_eq!(
            map_item_limit(None, b(1000, 10)),
            (10, "[limits] max_map_items")
        );
    }
}
