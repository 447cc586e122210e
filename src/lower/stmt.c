/* SPDX-License-Identifier: Apache-2.0 */
/* The front end's declarations and statements: the contexts that convert a
 * value (an initialiser, a return, a condition), and the pass over a whole
 * source. Preprocessor lines are not seen (the lexer skips them), so code in
 * both arms of an #if is parsed as if both were there. */
#include "lower/lower.h"

static void statement(lower_parser *p);

static lower_value full_expression(lower_parser *p)
{
    lower_value v = clmad__lower_expression(p);
    clmad__lower_commit(p, &v);
    return v;
}

static void condition_in_parens(lower_parser *p)
{
    clmad__lower_expect(p, "(");
    lower_value c = clmad__lower_condition(p, clmad__lower_expression(p));
    clmad__lower_commit(p, &c);
    clmad__lower_expect(p, ")");
}

static void initializer(lower_parser *p, lower_type t)
{
    if (clmad__lower_accept(p, "{")) {
        clmad__lower_enter(p);
        lower_type element = t;
        if (element.ptr)
            element.ptr--;
        while (!clmad__lower_accept(p, "}")) {
            initializer(p, element);
            if (!clmad__lower_accept(p, ","))
                clmad__lower_expect(p, "}"), p->pos--;
        }
        clmad__lower_leave(p);
        return;
    }
    lower_value v = clmad__lower_to(p, clmad__lower_assignment(p), t, "the initial value");
    clmad__lower_commit(p, &v);
}

/* A declaration, from its specifiers to the ';'; at file scope, functions
 * are recorded and, with bodies, their bodies are parsed. */
static void declaration(lower_parser *p, int file_scope, int bodies)
{
    lower_specifiers s = clmad__lower_specifiers(p);
    if (clmad__lower_accept(p, ";"))
        return;
    do {
        int name, params;
        lower_type t = clmad__lower_declarator(p, s.type, &name, &params);
        if (name < 0)
            clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected a name");
        if (s.is_typedef) {
            p->typedefs = clmad__lower_grow(p, p->typedefs, &p->cap_typedefs, p->n_typedefs + 1, sizeof *p->typedefs);
            lower_symbol *td = &p->typedefs[p->n_typedefs++];
            td->name = clmad__lower_tok(p, name)->start;
            td->name_len = clmad__lower_tok(p, name)->len;
            td->type = t;
            continue;
        }
        if (params >= 0 && file_scope) {
            if (!clmad__lower_function(p, name)) {
                p->fns = clmad__lower_grow(p, p->fns, &p->cap_fns, p->n_fns + 1, sizeof *p->fns);
                lower_function *f = &p->fns[p->n_fns++];
                f->name = clmad__lower_tok(p, name)->start;
                f->name_len = clmad__lower_tok(p, name)->len;
                f->ret = t;
                f->n_params = clmad__lower_params(p, params, f->params, 0);
            }
            if (clmad__lower_is(p, p->pos, "{")) {
                if (!bodies) {
                    clmad__lower_skip_balanced(p);
                    return;
                }
                int scope = p->n_syms;
                lower_type unused[LOWER_MAX_PARAMS];
                clmad__lower_params(p, params, unused, 1);
                p->fn_ret = t;
                p->fn_current = (int)(clmad__lower_function(p, name) - p->fns);
                statement(p);
                p->fn_current = -1;
                p->n_syms = scope;
                return;
            }
            continue;
        }
        clmad__lower_declare(p, name, t);
        if (clmad__lower_accept(p, "=")) {
            if (file_scope) {
                while (!clmad__lower_is(p, p->pos, ",") && !clmad__lower_is(p, p->pos, ";")) {
                    if (clmad__lower_tok(p, p->pos)->kind == LTK_EOF)
                        clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected ';'");
                    if (clmad__lower_is(p, p->pos, "{") || clmad__lower_is(p, p->pos, "("))
                        clmad__lower_skip_balanced(p);
                    else
                        p->pos++;
                }
            } else {
                initializer(p, t);
            }
        }
    } while (clmad__lower_accept(p, ","));
    clmad__lower_expect(p, ";");
}

static void statement_body(lower_parser *p);

static void statement(lower_parser *p)
{
    clmad__lower_enter(p);
    statement_body(p);
    clmad__lower_leave(p);
}

static void statement_body(lower_parser *p)
{
    int at = p->pos;
    if (clmad__lower_accept(p, "{")) {
        int scope = p->n_syms;
        while (!clmad__lower_accept(p, "}")) {
            if (clmad__lower_tok(p, p->pos)->kind == LTK_EOF)
                clmad__lower_fail(p, LOWER_PARSE_FAILED, at, "unbalanced '{'");
            statement(p);
        }
        p->n_syms = scope;
    } else if (clmad__lower_accept(p, ";")) {
    } else if (clmad__lower_accept(p, "if")) {
        condition_in_parens(p);
        statement(p);
        if (clmad__lower_accept(p, "else"))
            statement(p);
    } else if (clmad__lower_accept(p, "while")) {
        condition_in_parens(p);
        statement(p);
    } else if (clmad__lower_accept(p, "do")) {
        statement(p);
        if (!clmad__lower_accept(p, "while"))
            clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected 'while'");
        condition_in_parens(p);
        clmad__lower_expect(p, ";");
    } else if (clmad__lower_accept(p, "for")) {
        int scope = p->n_syms;
        clmad__lower_expect(p, "(");
        if (clmad__lower_starts_type(p, p->pos))
            declaration(p, 0, 1);
        else if (!clmad__lower_accept(p, ";"))
            full_expression(p), clmad__lower_expect(p, ";");
        if (!clmad__lower_is(p, p->pos, ";")) {
            lower_value c = clmad__lower_condition(p, clmad__lower_expression(p));
            clmad__lower_commit(p, &c);
        }
        clmad__lower_expect(p, ";");
        if (!clmad__lower_is(p, p->pos, ")"))
            full_expression(p);
        clmad__lower_expect(p, ")");
        statement(p);
        p->n_syms = scope;
    } else if (clmad__lower_accept(p, "switch")) {
        clmad__lower_expect(p, "(");
        lower_value v = full_expression(p);
        if (v.type.base == LT_T && v.type.ptr == 0)
            clmad__lower_fail(p, LOWER_TYPE_ERROR, v.first, "switch on T; compare ad_val(x) or branch with if");
        clmad__lower_expect(p, ")");
        statement(p);
    } else if (clmad__lower_accept(p, "case")) {
        clmad__lower_expression(p);
        clmad__lower_expect(p, ":");
    } else if (clmad__lower_accept(p, "default")) {
        clmad__lower_expect(p, ":");
    } else if (clmad__lower_accept(p, "return")) {
        if (!clmad__lower_accept(p, ";")) {
            lower_value v = clmad__lower_to(p, clmad__lower_expression(p), p->fn_ret, "the value returned");
            clmad__lower_commit(p, &v);
            clmad__lower_expect(p, ";");
        }
    } else if (clmad__lower_accept(p, "break") || clmad__lower_accept(p, "continue")) {
        clmad__lower_expect(p, ";");
    } else if (clmad__lower_accept(p, "goto")) {
        p->pos++;
        clmad__lower_expect(p, ";");
    } else if (clmad__lower_tok(p, at)->kind == LTK_IDENT && clmad__lower_is(p, at + 1, ":") &&
               !clmad__lower_starts_type(p, at)) {
        p->pos += 2; /* a label */
    } else if (clmad__lower_word_is(p, at, "__attribute__") && !clmad__lower_starts_type(p, at + 1)) {
        p->pos++;
        clmad__lower_skip_balanced(p); /* a statement attribute, e.g. opencl_unroll_hint */
    } else if (clmad__lower_starts_type(p, at)) {
        declaration(p, 0, 1);
    } else {
        full_expression(p);
        clmad__lower_expect(p, ";");
    }
}

void clmad__lower_source(lower_parser *p)
{
    /* Two passes: the first records the functions, so that a call before a
     * function's definition knows its parameter types; the second parses
     * the bodies. */
    p->fn_current = -1;
    for (int bodies = 0; bodies <= 1; bodies++) {
        p->pos = 0;
        p->n_syms = 0;
        p->n_typedefs = 0;
        while (clmad__lower_tok(p, p->pos)->kind != LTK_EOF) {
            if (clmad__lower_accept(p, ";"))
                continue;
            if (!clmad__lower_starts_type(p, p->pos))
                clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected a declaration or a function");
            declaration(p, 1, bodies);
        }
    }
    clmad__lower_check_recursion(p);
}
