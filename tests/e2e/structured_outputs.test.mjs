// Constrained decoding through the real server and SDKs: every reply generated under a JSON
// Schema validates against it with a real validator (ajv), on every family. Random weights make
// this a property test: the model's random choices walk the grammar widely. Also: the same bytes
// with the prompt cache on and off and batched or alone, forced tool calls whose arguments
// validate against the tool's schema, logit_bias, and the 400s that name the field.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { makeModel, startServer } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../node/package.json'));
const Ajv = require('ajv').default ?? require('ajv');
const addFormats = require('ajv-formats').default ?? require('ajv-formats');

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);

const ALL_FAMILIES = ['qwen3_5', 'mamba2', 'qwen3', 'gemma3', 'llama', 'qwen3_moe', 'granitemoehybrid',
                      'lfm2', 'nemotron_h', 'falcon_h1', 'qwen3_5_moe', 'qwen3_next',
                      'granitemoehybrid_moe', 'lfm2_moe'];
// Under a sanitizer the engine runs several times slower: the property sweep keeps one family of
// each kind (hybrid, recurrent, dense) there, and the plain build runs them all.
const sanitized = (process.env.RECUR_SANITIZE ?? '') !== '';
const FAMILIES = sanitized ? ['qwen3_5', 'mamba2', 'qwen3'] : ALL_FAMILIES;
const SEEDS = sanitized ? 4 : 8;

// A function-call-like object with ten parameters of every kind, in strict mode's shape.
const TEN_PARAMS = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 12 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 14 },
    hourly: { type: 'boolean' },
    lat: { type: 'number' },
    tags: { type: 'array', items: { type: 'string', maxLength: 6 }, maxItems: 3 },
    note: { type: ['string', 'null'], maxLength: 8 },
    level: { anyOf: [{ type: 'integer', minimum: -5, maximum: 5 }, { const: 'max' }] },
    when: { type: 'string', format: 'date' },
    opts: { type: 'object', properties: { fast: { type: 'boolean' } }, required: ['fast'],
            additionalProperties: false },
  },
  required: ['city', 'unit', 'days', 'hourly', 'lat', 'tags', 'note', 'level', 'when', 'opts'],
  additionalProperties: false,
};

// A recursive schema: a tree through $defs.
const TREE = {
  $defs: {
    node: {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 5 },
        children: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 },
      },
      required: ['name'],  // optional children: random weights otherwise nest without end
      additionalProperties: false,
    },
  },
  $ref: '#/$defs/node',
};

const SCHEMAS = { ten_params: TEN_PARAMS, tree: TREE };
const SMALL = { type: 'object', properties: { n: { type: 'integer', minimum: 0, maximum: 99 } },
                required: ['n'], additionalProperties: false };
// Random weights rarely close a reasoning block: the property runs answer at once; the thinking
// test below makes the close likely with logit_bias.
const NO_THINKING = { chat_template_kwargs: { enable_thinking: false } };

function tokenId(modelDir, content) {
  const tok = JSON.parse(readFileSync(join(modelDir, 'tokenizer.json'), 'utf8'));
  const added = tok.added_tokens.find((t) => t.content === content);
  return added ? added.id : tok.model.vocab[content];
}

async function chat(server, body) {
  const r = await fetch(`${server.base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Answer in JSON.' }], ...body }),
  });
  return { status: r.status, body: await r.json() };
}

// A finished reply must validate; one cut by max_tokens must still be a prefix the grammar took,
// which the next test's exact comparisons cover.
function checkReply(choice, schema, what) {
  if (choice.finish_reason !== 'stop') return false;
  const value = JSON.parse(choice.message.content);
  const validate = ajv.compile(schema);
  assert.ok(validate(value), `${what}: ${choice.message.content}\n${ajv.errorsText(validate.errors)}`);
  return true;
}

for (const family of FAMILIES) {
  describe(`structured outputs: ${family}`, () => {
    let server;
    before(async () => { server = await startServer(makeModel(family)); });
    after(async () => { await server?.stop(); });

    for (const [name, schema] of Object.entries(SCHEMAS)) {
      test(`replies validate against the ${name} schema`, async () => {
        let finished = 0;
        for (let seed = 0; seed < SEEDS; seed++) {
          const r = await chat(server, {
            model: family, max_tokens: 800, temperature: 1, seed, ...NO_THINKING,
            response_format: { type: 'json_schema', json_schema: { name, schema, strict: true } },
          });
          assert.equal(r.status, 200, JSON.stringify(r.body));
          if (checkReply(r.body.choices[0], schema, `${family} ${name} seed ${seed}`)) finished++;
          else assert.equal(r.body.choices[0].finish_reason, 'length');
        }
        assert.ok(finished >= 1, `no reply of ${family} finished within max_tokens`);
      });
    }

    test('json_object replies are JSON objects', async () => {
      let finished = 0;
      for (let seed = 0; seed < 3; seed++) {
        const r = await chat(server, { model: family, max_tokens: 300, seed, ...NO_THINKING,
                                       response_format: { type: 'json_object' } });
        assert.equal(r.status, 200);
        const c = r.body.choices[0];
        if (c.finish_reason === 'stop') {
          finished++;
          const v = JSON.parse(c.message.content);
          assert.equal(typeof v, 'object');
          assert.ok(v !== null && !Array.isArray(v));
        } else {
          assert.equal(c.finish_reason, 'length');
        }
      }
      assert.ok(finished >= 1, `no json_object reply of ${family} finished within max_tokens`);
    });
  });
}

describe('structured outputs: exact bytes', () => {
  const family = 'qwen3_5';
  let cached, uncached;
  before(async () => {
    cached = await startServer(makeModel(family), ['--parallel', '4']);
    uncached = await startServer(makeModel(family), ['--no-prompt-cache']);
  });
  after(async () => { await cached?.stop(); await uncached?.stop(); });

  test('cache on and off, batched and alone give the same bytes', async () => {
    const body = (seed) => ({
      model: family, max_tokens: 120, temperature: 1, seed, ...NO_THINKING,
      response_format: { type: 'json_schema', json_schema: { name: 't', schema: TEN_PARAMS } },
    });
    const alone = [];
    for (let seed = 0; seed < 4; seed++) alone.push((await chat(uncached, body(seed))).body);
    const batched = await Promise.all([0, 1, 2, 3].map((seed) => chat(cached, body(seed))));
    const again = await Promise.all([0, 1, 2, 3].map((seed) => chat(cached, body(seed))));
    for (let i = 0; i < 4; i++) {
      assert.ok(alone[i].choices[0].message.content.startsWith('{'), JSON.stringify(alone[i]));
      assert.equal(batched[i].body.choices[0].message.content, alone[i].choices[0].message.content);
      assert.equal(again[i].body.choices[0].message.content, alone[i].choices[0].message.content);
    }
  });
});

describe('structured outputs: every API', () => {
  let server;
  before(async () => { server = await startServer(makeModel('qwen3')); });
  after(async () => { await server?.stop(); });

  test('the OpenAI SDK parses response_format replies', async () => {
    const client = server.client();
    const r = await client.chat.completions.create({
      model: 'qwen3', messages: [{ role: 'user', content: 'A tree.' }], max_tokens: 300, seed: 3,
      response_format: { type: 'json_schema', json_schema: { name: 'tree', schema: TREE } },
    });
    assert.ok(checkReply(r.choices[0], TREE, 'sdk'), JSON.stringify(r.choices[0]));
  });

  test('Responses text.format json_schema is enforced and echoed (OpenAI SDK)', async () => {
    const r = await server.client().responses.create({
      model: 'qwen3', input: 'A tree.', max_output_tokens: 300, seed: 1,
      text: { format: { type: 'json_schema', name: 'tree', schema: TREE, strict: true } },
    });
    assert.equal(r.text.format.type, 'json_schema');
    assert.equal(r.text.format.name, 'tree');
    assert.equal(r.status, 'completed', JSON.stringify(r));
    const validate = ajv.compile(TREE);
    assert.ok(validate(JSON.parse(r.output_text)), r.output_text);
  });

  test('Anthropic output_config.format is enforced (Anthropic SDK)', async () => {
    const r = await server.anthropic().messages.create({
      model: 'qwen3', max_tokens: 300, seed: 2, messages: [{ role: 'user', content: 'A tree.' }],
      output_config: { format: { type: 'json_schema', schema: TREE } },
    });
    assert.equal(r.stop_reason, 'end_turn', JSON.stringify(r));
    const validate = ajv.compile(TREE);
    assert.ok(validate(JSON.parse(r.content.find((b) => b.type === 'text').text)));
  });

  test('a GBNF grammar is enforced', async () => {
    const r = await chat(server, { model: 'qwen3', max_tokens: 40, seed: 2,
                                   grammar: 'root ::= ("yes" | "no") " " [0-9]{1,3}' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(r.body.choices[0].message.content, /^(yes|no) [0-9]{1,3}$/);
    assert.equal(r.body.choices[0].finish_reason, 'stop');
  });

  test('text completions take a grammar and a response_format too', async () => {
    const post = (body) => server.json('/v1/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'qwen3', prompt: 'Answer:', max_tokens: 40, seed: 5, ...body }),
    });
    const g = await post({ grammar: 'root ::= ("yes" | "no") "!"' });
    assert.equal(g.status, 200, JSON.stringify(g.body));
    assert.match(g.body.choices[0].text, /^(yes|no)!$/);
    const s = await post({ max_tokens: 300, response_format: { type: 'json_schema',
                                                               json_schema: { name: 'n', schema: SMALL } } });
    assert.equal(s.status, 200);
    assert.equal(s.body.choices[0].finish_reason, 'stop', JSON.stringify(s.body));
    assert.ok(ajv.compile(SMALL)(JSON.parse(s.body.choices[0].text)), s.body.choices[0].text);
    const bad = await post({ grammar: 'root ::= (' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'grammar');
  });

  test('max_tokens inside the constrained span ends with length', async () => {
    const r = await chat(server, { model: 'qwen3', max_tokens: 3, seed: 2,
                                   grammar: 'root ::= "{" [a-z]{50} "}"' });
    assert.equal(r.body.choices[0].finish_reason, 'length');
    assert.match(r.body.choices[0].message.content, /^\{[a-z]*$/);
  });

  test('logit_bias -100 bans a token, 100 forces it', async () => {
    const dir = makeModel('qwen3');
    const a = tokenId(dir, 'a'), b = tokenId(dir, 'b');
    for (const seed of [1, 2, 3, 4]) {
      const body = { model: 'qwen3', max_tokens: 4, seed, ...NO_THINKING, grammar: 'root ::= [ab]' };
      const banned = await chat(server, { ...body, logit_bias: { [a]: -100 } });
      assert.equal(banned.body.choices[0].message.content, 'b', JSON.stringify(banned.body));
      const forced = await chat(server, { ...body, logit_bias: { [a]: 100 } });
      assert.equal(forced.body.choices[0].message.content, 'a');
    }
    const free = await chat(server, { model: 'qwen3', max_tokens: 3, temperature: 0, ...NO_THINKING,
                                      logit_bias: { [b]: 100 } });
    assert.equal(free.body.choices[0].message.content, 'bbb');
  });

  test('bad requests get a 400 naming the field', async () => {
    const cases = [
      [{ response_format: { type: 'xml' } }, 'response_format.type'],
      [{ response_format: { type: 'json_schema' } }, 'response_format.json_schema'],
      [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { not: {} } } } } } },
       'response_format.json_schema.schema'],
      [{ grammar: 'root ::= "a' }, 'grammar'],
      [{ grammar: 'root ::= foo' }, 'grammar'],
      [{ grammar: 'root ::= "a"', response_format: { type: 'json_object' } }, 'grammar'],
      [{ logit_bias: { 99999999: 5 } }, 'logit_bias.99999999'],
      [{ logit_bias: { abc: 5 } }, 'logit_bias.abc'],
      [{ logit_bias: { 5: 101 } }, 'logit_bias.5'],
    ];
    for (const [extra, param] of cases) {
      const r = await chat(server, { model: 'qwen3', max_tokens: 4, ...extra });
      assert.equal(r.status, 400, `${JSON.stringify(extra)} -> ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.param, param, JSON.stringify(r.body));
    }
    const schemaError = await chat(server, { model: 'qwen3', max_tokens: 4,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { not: {} } } } } } });
    assert.match(schemaError.body.error.message, /\$\.properties\.a.*'not'/);
  });
});

describe('structured outputs: thinking', () => {
  let server;
  before(async () => { server = await startServer(makeModel('qwen3_5')); });
  after(async () => { await server?.stop(); });

  test('a thinking model reasons freely, then answers under the schema', async () => {
    const dir = makeModel('qwen3_5');
    const close = tokenId(dir, '</think>');
    let answered = 0;
    for (const seed of [1, 2, 3]) {
      const r = await chat(server, {
        model: 'qwen3_5', max_tokens: 400, seed, logit_bias: { [close]: 6 },
        chat_template_kwargs: { enable_thinking: true },
        response_format: { type: 'json_schema', json_schema: { name: 'n', schema: SMALL } },
      });
      assert.equal(r.status, 200);
      const c = r.body.choices[0];
      if (c.finish_reason !== 'stop') continue;
      answered++;
      assert.ok(c.message.reasoning_content !== undefined, JSON.stringify(c.message));
      checkReply(c, SMALL, `thinking seed ${seed}`);
    }
    assert.ok(answered >= 1);
  });
});

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'Weather of a city.',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 20 },
                                                days: { type: 'integer', minimum: 1, maximum: 7 } },
                  required: ['city', 'days'], additionalProperties: false },
  },
};
const TIME_TOOL = {
  type: 'function',
  function: { name: 'get_time', description: 'Time in a zone.',
              parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } },
                            required: ['zone'], additionalProperties: false } },
};

for (const family of ['qwen3', 'qwen3_5', 'llama', 'lfm2']) {
  describe(`forced tool calls: ${family}`, () => {
    let server;
    before(async () => { server = await startServer(makeModel(family)); });
    after(async () => { await server?.stop(); });

    test('tool_choice required and named force valid calls', async () => {
      for (const [choice, names] of [['required', ['get_weather', 'get_time']],
                                     [{ type: 'function', function: { name: 'get_time' } }, ['get_time']]]) {
        let called = 0;
        for (let seed = 0; seed < 3; seed++) {
          const r = await chat(server, { model: family, max_tokens: 200, seed, ...NO_THINKING,
                                         tools: [WEATHER_TOOL, TIME_TOOL],
                                         tool_choice: choice, parallel_tool_calls: false });
          assert.equal(r.status, 200, JSON.stringify(r.body));
          const c = r.body.choices[0];
          if (c.finish_reason === 'length') continue;
          assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
          for (const call of c.message.tool_calls) {
            assert.ok(names.includes(call.function.name), call.function.name);
            const tool = [WEATHER_TOOL, TIME_TOOL].find((t) => t.function.name === call.function.name);
            const validate = ajv.compile(tool.function.parameters);
            const args = JSON.parse(call.function.arguments);
            assert.ok(validate(args), `${call.function.arguments}: ${ajv.errorsText(validate.errors)}`);
          }
          called++;
        }
        assert.ok(called >= 1, `no forced call of ${family} finished within max_tokens`);
      }
    });

    test('a named tool that is not declared is a 400', async () => {
      const r = await chat(server, { model: family, max_tokens: 8, tools: [WEATHER_TOOL],
                                     tool_choice: { type: 'function', function: { name: 'nope' } } });
      assert.equal(r.status, 400);
      assert.equal(r.body.error.param, 'tool_choice');
    });
  });
}
