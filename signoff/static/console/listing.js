// What the task list shows: the tasks of the chosen queue filtered (unclaimed, claimed by
// me, overdue; by target), searched (subject and payload text) and sorted (priority, due,
// age, amount), with the count each filter would show. The filters live in the route's
// query (`#/?show=mine&target=…&sort=amount&q=refund`), so a link shares them.

export const SHOWS = [
  ["all", "All"],
  ["unclaimed", "Unclaimed"],
  ["mine", "Claimed by me"],
  ["overdue", "Overdue"],
];
export const SORTS = [
  ["priority", "Priority, then due"],
  ["due", "Due soonest"],
  ["age", "Oldest first"],
  ["amount", "Largest amount"],
];
const DEFAULTS = { show: "all", target: "", sort: "priority", q: "" };

const SHOW_TESTS = {
  all: () => true,
  unclaimed: (task) => task.state === "OPEN",
  mine: (task) => task.claimedByMe,
  overdue: (task, now) => Boolean(task.dueAt) && Date.parse(task.dueAt) < now,
};

/** The filters a route's query names (anything unknown reads as the default). */
export function filtersOf(query) {
  const show = query.get("show");
  const sort = query.get("sort");
  return {
    show: show in SHOW_TESTS ? show : DEFAULTS.show,
    target: query.get("target") || DEFAULTS.target,
    sort: SORTS.some(([name]) => name === sort) ? sort : DEFAULTS.sort,
    q: query.get("q") || DEFAULTS.q,
  };
}

/** The query naming `filters` (defaults left out, so the plain list keeps a plain link). */
export function queryOf(filters) {
  const query = new URLSearchParams();
  for (const key of ["show", "target", "sort", "q"]) {
    if (filters[key] && filters[key] !== DEFAULTS[key]) query.set(key, filters[key]);
  }
  return query;
}

// A task's text the search looks through, made once per task object (an event about the
// task brings a new object, and with it new text).
const searchable = new WeakMap();

function textOf(task) {
  let text = searchable.get(task);
  if (text === undefined) {
    const proposal = task.proposal;
    const parts = [task.title];
    if (proposal) parts.push(JSON.stringify(proposal.subject), JSON.stringify(proposal.payload));
    text = parts.join(" ").toLowerCase();
    searchable.set(task, text);
  }
  return text;
}

/** The numeric value of the task's summary field (its target's `summaryField`), if any. */
export function summaryNumber(task) {
  const proposal = task.proposal;
  const field = proposal && proposal.target.summaryField;
  const value = field && proposal.payload ? proposal.payload[field] : undefined;
  return typeof value === "number" ? value : null;
}

function since(task) {
  return task.proposal ? task.proposal.createdAt : task.createdAt;
}

const byId = (a, b) => a.id.localeCompare(b.id);
const ORDERS = {
  priority: (a, b) => b.priority - a.priority || a.dueAt.localeCompare(b.dueAt) || byId(a, b),
  due: (a, b) => a.dueAt.localeCompare(b.dueAt) || b.priority - a.priority || byId(a, b),
  age: (a, b) => since(a).localeCompare(since(b)) || byId(a, b),
  // Largest first; tasks with no amount after every one with an amount.
  amount: (a, b) => {
    const [x, y] = [summaryNumber(a), summaryNumber(b)];
    if (x === null || y === null) return (x === null) - (y === null) || ORDERS.priority(a, b);
    return y - x || ORDERS.priority(a, b);
  },
};

/**
 * The rows to show for `filters`, in order, and the counts beside each filter: `shows`
 * (each SHOWS entry with the target and search applied) and `targets` (each target in
 * the queue, with the show and search applied).
 */
export function listTasks(tasks, filters, now = Date.now()) {
  const needle = filters.q.trim().toLowerCase();
  const shows = Object.fromEntries(SHOWS.map(([name]) => [name, 0]));
  const targets = new Map();
  const rows = [];
  const passes = SHOW_TESTS[filters.show];
  for (const task of tasks) {
    if (needle && !textOf(task).includes(needle)) continue;
    const target = task.proposal ? task.proposal.target : null;
    const onTarget = !filters.target || (target && target.id === filters.target);
    const shown = passes(task, now);
    if (target) {
      const entry = targets.get(target.id) || { id: target.id, name: target.name, count: 0 };
      if (shown) entry.count += 1;
      targets.set(target.id, entry);
    }
    if (!onTarget) continue;
    for (const [name] of SHOWS) if (SHOW_TESTS[name](task, now)) shows[name] += 1;
    if (shown) rows.push(task);
  }
  rows.sort(ORDERS[filters.sort]);
  const targetList = [...targets.values()].sort((a, b) => a.name.localeCompare(b.name));
  return { rows, shows, targets: targetList };
}
