//! Dependency cycles: which work items wait for each other in a circle.

use std::collections::VecDeque;

/// One cycle per strongly connected group of work items that wait for each other, as the
/// closed path `[a, b, …, a]`: it starts at the group's first item in plan order and is a
/// shortest way back to it. Cycles are listed by that first item. `edges[i]` lists the items
/// item `i` depends on; self-edges are not expected (they are reported on their own).
pub(super) fn cycles(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut found: Vec<Vec<usize>> = components(edges)
        .into_iter()
        .filter(|component| component.len() > 1)
        .filter_map(|component| {
            let start = component.iter().copied().min()?;
            shortest_cycle(edges, &component, start)
        })
        .collect();
    found.sort();
    found
}

/// The strongly connected components (Tarjan's algorithm, iterative so a long dependency
/// chain cannot overflow the stack).
fn components(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let count = edges.len();
    let mut index: Vec<Option<usize>> = vec![None; count];
    let mut low = vec![0; count];
    let mut on_stack = vec![false; count];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut components = Vec::new();
    for root in 0..count {
        if index[root].is_some() {
            continue;
        }
        let mut calls = vec![(root, 0_usize)];
        index[root] = Some(next);
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (node, ref mut edge)) = calls.last_mut() {
            if let Some(&target) = edges[node].get(*edge) {
                *edge += 1;
                if target >= count {
                    continue;
                }
                match index[target] {
                    None => {
                        index[target] = Some(next);
                        low[target] = next;
                        next += 1;
                        stack.push(target);
                        on_stack[target] = true;
                        calls.push((target, 0));
                    }
                    Some(target_index) if on_stack[target] => {
                        low[node] = low[node].min(target_index);
                    }
                    Some(_) => {}
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if Some(low[node]) == index[node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

/// A shortest closed path from `start` back to itself inside `component` (breadth first).
fn shortest_cycle(edges: &[Vec<usize>], component: &[usize], start: usize) -> Option<Vec<usize>> {
    let mut inside = vec![false; edges.len()];
    for &member in component {
        inside[member] = true;
    }
    let mut parent: Vec<Option<usize>> = vec![None; edges.len()];
    let mut seen = vec![false; edges.len()];
    seen[start] = true;
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &target in &edges[node] {
            if target == start {
                let mut path = vec![node];
                let mut at = node;
                while at != start {
                    at = parent[at]?;
                    path.push(at);
                }
                path.reverse();
                path.push(start);
                return Some(path);
            }
            if inside.get(target) == Some(&true) && !seen[target] {
                seen[target] = true;
                parent[target] = Some(node);
                queue.push_back(target);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dag_has_no_cycle() {
        assert!(cycles(&[vec![1, 2], vec![2], vec![]]).is_empty());
    }

    #[test]
    fn each_cycle_is_named_once_from_its_first_item() {
        // 0 -> 1 -> 2 -> 0, and 3 <-> 4; 5 depends on the first cycle without being in it.
        let edges = vec![vec![1], vec![2], vec![0], vec![4], vec![3], vec![0]];
        assert_eq!(cycles(&edges), vec![vec![0, 1, 2, 0], vec![3, 4, 3]]);
    }

    #[test]
    fn the_shortest_way_back_is_chosen() {
        // 0 -> 1 -> 2 -> 3 -> 0 and the shortcut 1 -> 0.
        let edges = vec![vec![1], vec![2, 0], vec![3], vec![0]];
        assert_eq!(cycles(&edges), vec![vec![0, 1, 0]]);
    }

    #[test]
    fn long_chains_do_not_overflow() {
        let count = 100_000;
        let mut edges: Vec<Vec<usize>> = (0..count).map(|node| vec![node + 1]).collect();
        edges[count - 1] = vec![0];
        let found = cycles(&edges);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].len(), count + 1);
    }
}
