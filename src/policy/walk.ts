/** An object of a libpg-query parse tree (a node's body, or the `{Kind: body}` wrapper around it). */
export type TreeNode = Record<string, unknown>;

/**
 * Visits every object of a parse tree, depth first in the order the tree lists them, with the key it sits under (for
 * a wrapped node, its type name: `FuncCall`, `ColumnRef`, ...), and returns the first thing `visit` returns. Literals
 * (A_Const) are not entered: nothing below them is a name or a call. Iterative, so a deep tree never overflows the
 * stack; with `limit`, a tree deeper than `limit.maxDepth` gives `limit.tooDeep()` instead.
 */
export function findInTree<T>(
  root: unknown,
  visit: (node: TreeNode, key: string | undefined) => T | undefined,
  limit?: { maxDepth: number; tooDeep: () => T },
): T | undefined {
  const stack: Array<{ value: unknown; key: string | undefined; depth: number }> = [{ value: root, key: undefined, depth: 0 }];
  while (stack.length > 0) {
    const { value, key, depth } = stack.pop()!;
    if (limit && depth > limit.maxDepth) return limit.tooDeep();
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], key, depth: depth + 1 });
      continue;
    }
    if (value === null || typeof value !== 'object' || key === 'A_Const') continue;
    const node = value as TreeNode;
    const found = visit(node, key);
    if (found !== undefined) return found;
    const entries = Object.entries(node);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, v] = entries[i];
      if (typeof v === 'object' && v !== null) stack.push({ value: v, key: k, depth: depth + 1 });
    }
  }
  return undefined;
}
