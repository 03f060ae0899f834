/*
 * tlk_tree.c - the interval tree behind each object's read tree and write
 * tree: a red-black tree ordered by interval start, every node also keeping
 * the largest end in its subtree, so "the lowest locked byte in [a, b)" is one
 * walk from the root (O(log n)). The tree owns no memory: nodes live in the
 * requests' slots. Red-black insertion and deletion follow the textbook
 * algorithms with a sentinel leaf; rotations and deletions refresh the
 * augmented field on the way.
 */
#include <errno.h>

#include "tlk_int.h"

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The sentinel's max_end is 0 and every end is >= 1. */
static void refresh(struct tlk_node *x)
{
	x->max_end = max_u64(x->end, max_u64(x->left->max_end, x->right->max_end));
}

void tlk_tree_init(struct tlk_tree *tree)
{
	struct tlk_node *nil = &tree->nil;

	nil->left = nil->right = nil->parent = nil;
	nil->start = nil->end = nil->max_end = 0;
	nil->red = false;
	tree->root = nil;
	tree->count = 0;
	tree->bytes = 0;
}

/* Puts `y` where `x` hangs from x's parent. */
static void replace_child(struct tlk_tree *tree, struct tlk_node *x, struct tlk_node *y)
{
	if (x->parent == &tree->nil)
		tree->root = y;
	else if (x == x->parent->left)
		x->parent->left = y;
	else
		x->parent->right = y;
	y->parent = x->parent;
}

static void rotate_left(struct tlk_tree *tree, struct tlk_node *x)
{
	struct tlk_node *y = x->right;

	x->right = y->left;
	if (y->left != &tree->nil)
		y->left->parent = x;
	replace_child(tree, x, y);
	y->left = x;
	x->parent = y;
	refresh(x);
	refresh(y);
}

static void rotate_right(struct tlk_tree *tree, struct tlk_node *x)
{
	struct tlk_node *y = x->left;

	x->left = y->right;
	if (y->right != &tree->nil)
		y->right->parent = x;
	replace_child(tree, x, y);
	y->right = x;
	x->parent = y;
	refresh(x);
	refresh(y);
}

void tlk_tree_insert(struct tlk_tree *tree, struct tlk_node *z)
{
	struct tlk_node *nil = &tree->nil, *y = nil, *x = tree->root;

	/* Descend; z will sit below every node passed, so their max_end
	 * already includes it. Equal starts go right (insertion order). */
	while (x != nil) {
		y = x;
		x->max_end = max_u64(x->max_end, z->end);
		x = z->start < x->start ? x->left : x->right;
	}
	z->parent = y;
	if (y == nil)
		tree->root = z;
	else if (z->start < y->start)
		y->left = z;
	else
		y->right = z;
	z->left = z->right = nil;
	z->red = true;
	z->max_end = z->end;
	tree->count++;
	tree->bytes += z->end - z->start;

	while (z->parent->red) {
		struct tlk_node *g = z->parent->parent;
		if (z->parent == g->left) {
			struct tlk_node *u = g->right;
			if (u->red) {
				z->parent->red = u->red = false;
				g->red = true;
				z = g;
				continue;
			}
			if (z == z->parent->right) {
				z = z->parent;
				rotate_left(tree, z);
			}
			z->parent->red = false;
			g->red = true;
			rotate_right(tree, g);
		} else {
			struct tlk_node *u = g->left;
			if (u->red) {
				z->parent->red = u->red = false;
				g->red = true;
				z = g;
				continue;
			}
			if (z == z->parent->left) {
				z = z->parent;
				rotate_right(tree, z);
			}
			z->parent->red = false;
			g->red = true;
			rotate_left(tree, g);
		}
	}
	tree->root->red = false;
}

static void remove_fixup(struct tlk_tree *tree, struct tlk_node *x)
{
	while (x != tree->root && !x->red) {
		struct tlk_node *p = x->parent;
		if (x == p->left) {
			struct tlk_node *w = p->right;
			if (w->red) {
				w->red = false;
				p->red = true;
				rotate_left(tree, p);
				w = p->right;
			}
			if (!w->left->red && !w->right->red) {
				w->red = true;
				x = p;
				continue;
			}
			if (!w->right->red) {
				w->left->red = false;
				w->red = true;
				rotate_right(tree, w);
				w = p->right;
			}
			w->red = p->red;
			p->red = false;
			w->right->red = false;
			rotate_left(tree, p);
		} else {
			struct tlk_node *w = p->left;
			if (w->red) {
				w->red = false;
				p->red = true;
				rotate_right(tree, p);
				w = p->left;
			}
			if (!w->right->red && !w->left->red) {
				w->red = true;
				x = p;
				continue;
			}
			if (!w->left->red) {
				w->right->red = false;
				w->red = true;
				rotate_left(tree, w);
				w = p->left;
			}
			w->red = p->red;
			p->red = false;
			w->left->red = false;
			rotate_right(tree, p);
		}
		x = tree->root;
	}
	x->red = false;
}

void tlk_tree_remove(struct tlk_tree *tree, struct tlk_node *z)
{
	struct tlk_node *nil = &tree->nil, *x, *y = z;
	bool removed_red = y->red;

	tree->count--;
	tree->bytes -= z->end - z->start;
	if (z->left == nil) {
		x = z->right;
		replace_child(tree, z, x);
	} else if (z->right == nil) {
		x = z->left;
		replace_child(tree, z, x);
	} else {
		/* z's successor y takes z's place. */
		y = z->right;
		while (y->left != nil)
			y = y->left;
		removed_red = y->red;
		x = y->right;
		if (y->parent == z) {
			x->parent = y; /* also when x is the sentinel */
		} else {
			replace_child(tree, y, x);
			y->right = z->right;
			y->right->parent = y;
		}
		replace_child(tree, z, y);
		y->left = z->left;
		y->left->parent = y;
		y->red = z->red;
	}
	/* Every subtree that lost z (or moved y) lies on x's path up. */
	for (struct tlk_node *p = x->parent; p != nil; p = p->parent)
		refresh(p);
	if (!removed_red)
		remove_fixup(tree, x);
	nil->parent = nil;
	z->left = z->right = z->parent = NULL;
}

void tlk_tree_set_end(struct tlk_tree *tree, struct tlk_node *node, uint64_t end)
{
	tree->bytes = tree->bytes - (node->end - node->start) + (end - node->start);
	node->end = end;
	/* Where a max_end stays the same, those above it do too. */
	for (struct tlk_node *p = node; p != &tree->nil; p = p->parent) {
		uint64_t before = p->max_end;
		refresh(p);
		if (p->max_end == before)
			break;
	}
}

uint64_t tlk_tree_first_covered(const struct tlk_tree *tree, uint64_t a, uint64_t b)
{
	const struct tlk_node *nil = &tree->nil, *x = tree->root;

	/* If the left subtree has an interval ending after a, the answer is
	 * there or nowhere: either that interval starts before b, or it starts
	 * at or after b and so does everything to its right. */
	while (x != nil) {
		if (x->left->max_end > a) {
			x = x->left;
			continue;
		}
		if (x->start >= b)
			return b;
		if (x->end > a)
			return max_u64(a, x->start);
		x = x->right;
	}
	return b;
}

/* The interval of x's subtree, not skipped, that covers the lowest byte of
 * [a, *best), which becomes that byte; or NULL (*best unchanged). Subtrees
 * are pruned by max_end (nothing ends after a) and by start (nothing
 * starts before *best). */
static const struct tlk_node *first_kept(const struct tlk_tree *tree, const struct tlk_node *x,
					 uint64_t a, uint64_t *best, tlk_node_skip_fn skip,
					 const void *arg)
{
	const struct tlk_node *found = NULL, *left;

	while (x != &tree->nil && x->max_end > a) {
		if ((left = first_kept(tree, x->left, a, best, skip, arg)))
			found = left;
		if (x->start >= *best || *best == a)
			return found;
		if (x->end > a && !skip(x, arg)) {
			*best = max_u64(a, x->start); /* everything right starts later */
			return x;
		}
		x = x->right;
	}
	return found;
}

const struct tlk_node *tlk_tree_first_node_skip(const struct tlk_tree *tree, uint64_t a,
						uint64_t b, tlk_node_skip_fn skip, const void *arg)
{
	return first_kept(tree, tree->root, a, &b, skip, arg);
}

uint64_t tlk_tree_first_covered_skip(const struct tlk_tree *tree, uint64_t a, uint64_t b,
				     tlk_node_skip_fn skip, const void *arg)
{
	first_kept(tree, tree->root, a, &b, skip, arg);
	return b;
}

struct check_state {
	const struct tlk_node *prev; /* in-order predecessor */
	size_t count;
	uint64_t bytes;
	bool disjoint;
};

/* Black height of x's subtree, or -1 when anything is wrong. */
static int check_node(const struct tlk_tree *tree, const struct tlk_node *x,
		      struct check_state *st)
{
	const struct tlk_node *nil = &tree->nil;
	int lh, rh;

	if (x == nil)
		return 1;
	if (x->start >= x->end)
		return -1;
	if ((x->left != nil && x->left->parent != x) ||
	    (x->right != nil && x->right->parent != x))
		return -1;
	if (x->red && (x->left->red || x->right->red))
		return -1;
	lh = check_node(tree, x->left, st);
	if (lh < 0)
		return -1;
	if (st->prev && (st->prev->start > x->start ||
			 (st->disjoint && st->prev->end > x->start)))
		return -1;
	st->prev = x;
	st->count++;
	st->bytes += x->end - x->start;
	rh = check_node(tree, x->right, st);
	if (rh < 0 || lh != rh)
		return -1;
	if (x->max_end != max_u64(x->end, max_u64(x->left->max_end, x->right->max_end)))
		return -1;
	return lh + !x->red;
}

int tlk_tree_check(const struct tlk_tree *tree, bool disjoint)
{
	struct check_state st = { NULL, 0, 0, disjoint };
	const struct tlk_node *nil = &tree->nil;

	if (tree->root->red || nil->red || nil->max_end != 0)
		return -EFAULT;
	if (tree->root != nil && tree->root->parent != nil)
		return -EFAULT;
	if (check_node(tree, tree->root, &st) < 0)
		return -EFAULT;
	if (st.count != tree->count || st.bytes != tree->bytes)
		return -EFAULT;
	return 0;
}
