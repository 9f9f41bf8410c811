package graphs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

// A Keras model config (model.to_json(), stored by the graph_keras_model
// plugin) becomes a "conceptual graph": a GraphDef with one node per
// layer, as TensorBoard serves it for graphs/graph?conceptual=true. Nested
// models are name scopes; a node's name is its layer's name under the
// scopes of the models holding it; its op is left empty and the layer's
// class goes into the attribute keras_class (with its dtype under dtype).
//
// Layers are linked by their inbound nodes, which come in two shapes:
// Keras 2 writes [[name, node_index, tensor_index, kwargs], ...] per call,
// Keras 3 writes {"args": [{"config": {"keras_history": [name, node_index,
// tensor_index]}}, ...]}. TensorBoard reads only Keras 3's (its Keras 2
// layers get no inputs), and so does the default answer; tbhub reads both
// when asked (graphs/graph?keras2_inputs=true). A Sequential model's
// layers have none: each layer takes the previous one's output. A
// reference to a nested model stands for that model's output layers.

type kerasLayer struct {
	ClassName    string          `json:"class_name"`
	Config       kerasConfig     `json:"config"`
	InboundNodes json.RawMessage `json:"inbound_nodes"`
}

type kerasConfig struct {
	Name         string          `json:"name"`
	Layers       []kerasLayer    `json:"layers"`
	InputLayers  json.RawMessage `json:"input_layers"`
	OutputLayers json.RawMessage `json:"output_layers"`
	Dtype        json.RawMessage `json:"dtype"`
}

// kerasRef is one tensor a layer consumes: a layer name and which of its
// outputs.
type kerasRef struct {
	layer  string
	output int
}

type kerasConverter struct {
	g *tbpb.GraphDef
	// modelOutputs maps a nested model's scoped name to the scoped names of
	// its output layers.
	modelOutputs map[string][]string
	// extraInputs maps a nested model's input layer to what feeds the model.
	extraInputs map[string][]string
	// keras2 reads Keras 2's inbound nodes too.
	keras2 bool
	// lim bounds the models' nesting, the nodes' names and the bytes of
	// names and inputs in g (bytes); err, once set, stops the conversion.
	lim   Limits
	bytes int
	err   error
}

// errNotKeras is a config that is not a Keras model's.
var errNotKeras = errors.New("not a Keras model config")

// kerasGraph converts a Keras model's JSON config into a GraphDef, with
// Keras 2's inbound nodes read when keras2 is set. A model past lim
// (nested deeper than MaxDepth, a node name longer than MaxNameBytes,
// names and inputs of more than MaxAnswerBytes) is the 413 that says so,
// found before more of it is built.
func kerasGraph(config []byte, keras2 bool, lim Limits) (*tbpb.GraphDef, error) {
	var top kerasLayer
	if err := json.Unmarshal(config, &top); err != nil {
		return nil, fmt.Errorf("%w: %w", errNotKeras, err)
	}
	c := &kerasConverter{g: &tbpb.GraphDef{}, modelOutputs: map[string][]string{}, extraInputs: map[string][]string{}, keras2: keras2, lim: lim}
	c.layer(&top, "", "", 0)
	if c.err != nil {
		return nil, c.err
	}
	return c.g, nil
}

// add adds n to the graph unless the bytes of the graph's names and
// inputs would pass MaxAnswerBytes.
func (c *kerasConverter) add(n *tbpb.NodeDef) {
	c.bytes += len(n.Name)
	for _, in := range n.Input {
		c.bytes += len(in)
	}
	if c.bytes > c.lim.MaxAnswerBytes {
		c.err = tooLarge("the Keras model's layer names and inputs are larger than %d bytes, this server's limit", c.lim.MaxAnswerBytes)
		return
	}
	c.g.Node = append(c.g.Node, n)
}

func scopedName(scope, name string) string {
	if scope == "" {
		return name
	}
	return scope + "/" + name
}

// layer adds l (found in scope, depth models deep) to the graph and
// returns the name of the node standing for its output. prev is the output
// of the layer before it in a Sequential model, or "".
func (c *kerasConverter) layer(l *kerasLayer, scope, prev string, depth int) string {
	if depth > c.lim.MaxDepth && c.err == nil {
		c.err = tooLarge("the Keras model nests models deeper than %d levels, this server's limit", c.lim.MaxDepth)
	}
	name := scopedName(scope, l.Config.Name)
	if len(name) > c.lim.MaxNameBytes && c.err == nil {
		c.err = tooLarge("the Keras model has a layer whose name under its models' scopes is longer than %d bytes, this server's limit", c.lim.MaxNameBytes)
	}
	if c.err != nil {
		return name
	}
	inbound := c.resolve(scope, parseInbound(l.InboundNodes, c.keras2))
	if l.Config.Layers == nil {
		n := &tbpb.NodeDef{Name: name, Attr: map[string]*tbpb.AttrValue{}}
		if l.ClassName != "" {
			n.Attr["keras_class"] = &tbpb.AttrValue{Value: &tbpb.AttrValue_S{S: []byte(l.ClassName)}}
		}
		if dt, ok := kerasDtype(l.Config.Dtype); ok {
			n.Attr["dtype"] = &tbpb.AttrValue{Value: &tbpb.AttrValue_Type{Type: dt}}
		}
		switch {
		case len(l.InboundNodes) > 0 && string(l.InboundNodes) != "null":
			n.Input = append(n.Input, inbound...)
		case prev != "":
			n.Input = append(n.Input, prev)
		}
		n.Input = append(n.Input, c.extraInputs[name]...)
		c.add(n)
		return name
	}

	// A model: its layers go under its name.
	inputs := parseLayerList(l.Config.InputLayers)
	outputs := parseLayerList(l.Config.OutputLayers)
	functional := len(inputs) > 0 && len(outputs) > 0
	feed := prev
	if len(inbound) > 0 {
		feed = inbound[0]
	}
	if functional {
		for i, in := range inputs {
			switch {
			case i < len(inbound):
				c.extraInputs[scopedName(name, in.layer)] = append(c.extraInputs[scopedName(name, in.layer)], inbound[i])
			case i == 0 && len(inbound) == 0 && prev != "":
				c.extraInputs[scopedName(name, in.layer)] = append(c.extraInputs[scopedName(name, in.layer)], prev)
			}
		}
	}
	last := feed
	for i := 0; i < len(l.Config.Layers) && c.err == nil; i++ {
		p := ""
		if !functional {
			p = last
		}
		last = c.layer(&l.Config.Layers[i], name, p, depth+1)
	}
	if functional {
		c.modelOutputs[name] = c.resolve(name, outputs)
	} else if len(l.Config.Layers) > 0 {
		c.modelOutputs[name] = []string{last}
	}
	if outs := c.modelOutputs[name]; len(outs) > 0 {
		return outs[0]
	}
	return name
}

// resolve turns references made inside scope into node names; a
// reference to a nested model becomes the matching output of it.
func (c *kerasConverter) resolve(scope string, refs []kerasRef) []string {
	var out []string
	for _, r := range refs {
		name := scopedName(scope, r.layer)
		if outs := c.modelOutputs[name]; len(outs) > 0 {
			name = outs[min(max(r.output, 0), len(outs)-1)]
		}
		out = append(out, name)
	}
	return out
}

// parseInbound reads a layer's inbound_nodes in the Keras 3 shape, and
// the Keras 2 one if keras2; anything else yields no references.
func parseInbound(raw json.RawMessage, keras2 bool) []kerasRef {
	var calls []json.RawMessage
	if json.Unmarshal(raw, &calls) != nil {
		return nil
	}
	var refs []kerasRef
	for _, call := range calls {
		var k3 struct {
			Args []json.RawMessage `json:"args"`
		}
		if len(call) > 0 && call[0] == '{' {
			if json.Unmarshal(call, &k3) != nil {
				continue
			}
			for _, arg := range k3.Args {
				var many []json.RawMessage
				if json.Unmarshal(arg, &many) != nil {
					many = []json.RawMessage{arg}
				}
				for _, a := range many {
					var t struct {
						Config struct {
							History []json.RawMessage `json:"keras_history"`
						} `json:"config"`
					}
					if json.Unmarshal(a, &t) == nil {
						if r, ok := refFromList(t.Config.History); ok {
							refs = append(refs, r)
						}
					}
				}
			}
			continue
		}
		var k2 [][]json.RawMessage
		if !keras2 || json.Unmarshal(call, &k2) != nil {
			continue
		}
		for _, ref := range k2 {
			if r, ok := refFromList(ref); ok {
				refs = append(refs, r)
			}
		}
	}
	return refs
}

// parseLayerList reads input_layers/output_layers: one [name, node, tensor]
// or a list of them.
func parseLayerList(raw json.RawMessage) []kerasRef {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil
	}
	if r, ok := refFromList(items); ok {
		return []kerasRef{r}
	}
	var refs []kerasRef
	for _, it := range items {
		var l []json.RawMessage
		if json.Unmarshal(it, &l) == nil {
			if r, ok := refFromList(l); ok {
				refs = append(refs, r)
			}
		}
	}
	return refs
}

// refFromList reads [name, node_index, tensor_index, ...].
func refFromList(l []json.RawMessage) (kerasRef, bool) {
	if len(l) < 3 {
		return kerasRef{}, false
	}
	var r kerasRef
	var node int
	if json.Unmarshal(l[0], &r.layer) != nil || json.Unmarshal(l[1], &node) != nil || json.Unmarshal(l[2], &r.output) != nil {
		return kerasRef{}, false
	}
	return r, true
}

// kerasDtype maps a layer's dtype (a name such as "float32", or a dtype
// policy object whose config names one) to a DataType.
func kerasDtype(raw json.RawMessage) (tbpb.DataType, bool) {
	var name string
	if json.Unmarshal(raw, &name) != nil {
		var policy struct {
			Config struct {
				Name string `json:"name"`
			} `json:"config"`
		}
		if json.Unmarshal(raw, &policy) != nil {
			return 0, false
		}
		name = policy.Config.Name
	}
	switch name {
	case "float16", "half":
		name = "half"
	case "float32":
		name = "float"
	case "float64":
		name = "double"
	}
	dt, ok := tbpb.DataType_value["DT_"+strings.ToUpper(name)]
	return tbpb.DataType(dt), ok && dt != 0
}
