//! Strongly connected components and layer levels of a directed graph whose
//! nodes are `0..n`, given as successor lists.
//!
//! Invariants:
//! - components come out in reverse topological order: a component is listed
//!   after every component it has an edge to (Tarjan's order), and each
//!   component's nodes are sorted;
//! - a node's level is 0 when no edge leaves its component, else 1 + the
//!   highest level of a component it reaches in one step; all nodes of a
//!   component share one level, so circles cannot make levels loop;
//! - self-edges never make a component larger than one node.
//!
//! The search is iterative: a long chain of modules cannot overflow the stack.

/// The components of a graph and the level of each node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condensation {
    /// The strongly connected components, in reverse topological order.
    pub components: Vec<Vec<usize>>,
    /// The index in `components` of each node's component.
    pub component_of: Vec<usize>,
    /// The level of each node.
    pub level: Vec<usize>,
}

impl Condensation {
    /// The components of more than one node: the circles.
    pub fn circles(&self) -> impl Iterator<Item = &[usize]> {
        self.components
            .iter()
            .filter(|c| c.len() > 1)
            .map(Vec::as_slice)
    }
}

/// Condenses the graph with successor lists `successors` (every entry `< n`).
pub fn condense(successors: &[Vec<usize>]) -> Condensation {
    let components = strongly_connected(successors);
    let mut component_of = vec![0; successors.len()];
    for (c, members) in components.iter().enumerate() {
        for &v in members {
            component_of[v] = c;
        }
    }
    let component_level = component_levels(successors, &components, &component_of);
    let level = component_of.iter().map(|&c| component_level[c]).collect();
    Condensation {
        components,
        component_of,
        level,
    }
}

/// Tarjan's algorithm with an explicit call stack.
fn strongly_connected(successors: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut search = Tarjan::new(successors.len());
    for start in 0..successors.len() {
        if search.index[start].is_none() {
            search.run_from(start, successors);
        }
    }
    search.components
}

/// The state of one Tarjan search.
struct Tarjan {
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next_index: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    fn new(n: usize) -> Self {
        Tarjan {
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next_index: 0,
            components: Vec::new(),
        }
    }

    /// Gives `v` the next index and puts it on the component stack.
    fn enter(&mut self, v: usize) {
        self.index[v] = Some(self.next_index);
        self.low[v] = self.next_index;
        self.next_index += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
    }

    /// Depth-first search from `start`; each frame is (node, next successor).
    fn run_from(&mut self, start: usize, successors: &[Vec<usize>]) {
        self.enter(start);
        let mut calls = vec![(start, 0)];
        while let Some(&(v, next)) = calls.last() {
            if let Some(&w) = successors[v].get(next) {
                if let Some(top) = calls.last_mut() {
                    top.1 += 1;
                }
                match self.index[w] {
                    None => {
                        self.enter(w);
                        calls.push((w, 0));
                    }
                    Some(w_index) if self.on_stack[w] => {
                        self.low[v] = self.low[v].min(w_index);
                    }
                    Some(_) => {}
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                self.low[parent] = self.low[parent].min(self.low[v]);
            }
            if Some(self.low[v]) == self.index[v] {
                self.pop_component(v);
            }
        }
    }

    /// Pops the component whose root is `root` off the stack.
    fn pop_component(&mut self, root: usize) {
        let mut members = Vec::new();
        while let Some(w) = self.stack.pop() {
            self.on_stack[w] = false;
            members.push(w);
            if w == root {
                break;
            }
        }
        members.sort_unstable();
        self.components.push(members);
    }
}

/// Levels of the components, relying on their reverse topological order.
fn component_levels(
    successors: &[Vec<usize>],
    components: &[Vec<usize>],
    component_of: &[usize],
) -> Vec<usize> {
    let mut level = vec![0; components.len()];
    for (c, members) in components.iter().enumerate() {
        level[c] = members
            .iter()
            .flat_map(|&v| &successors[v])
            .map(|&w| component_of[w])
            .filter(|&d| d != c)
            .map(|d| level[d] + 1)
            .max()
            .unwrap_or(0);
    }
    level
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_node_cycle_is_one_circle_and_shares_a_level() {
        // 0 -> 1 -> 0, 1 -> 2
        let g = condense(&[vec![1], vec![0, 2], vec![]]);
        let circles: Vec<&[usize]> = g.circles().collect();
        assert_eq!(circles, vec![&[0, 1][..]]);
        assert_eq!(g.level, vec![1, 1, 0]);
    }

    #[test]
    fn a_chain_gets_increasing_levels_and_no_circle() {
        // 0 -> 1 -> 2, 0 -> 2, 3 -> 3 (self-edge)
        let g = condense(&[vec![1, 2], vec![2], vec![], vec![3]]);
        assert_eq!(g.circles().count(), 0);
        assert_eq!(g.level, vec![2, 1, 0, 0]);
    }

    #[test]
    fn components_come_after_what_they_point_to() {
        // 0 <-> 1 -> 2 <-> 3
        let g = condense(&[vec![1], vec![0, 2], vec![3], vec![2]]);
        assert_eq!(g.components, vec![vec![2, 3], vec![0, 1]]);
        assert_eq!(g.level, vec![1, 1, 0, 0]);
    }

    #[test]
    fn a_long_chain_does_not_overflow_the_stack() {
        let n = 200_000;
        let successors: Vec<Vec<usize>> = (0..n)
            .map(|v| if v + 1 < n { vec![v + 1] } else { vec![0] })
            .collect();
        let g = condense(&successors);
        assert_eq!(g.components.len(), 1);
        assert_eq!(g.components[0].len(), n);
    }
}
