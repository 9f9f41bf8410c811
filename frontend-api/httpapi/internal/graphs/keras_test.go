package graphs

import (
	"slices"
	"strings"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	"github.com/tbhub/tbhub/schemas/pbtxt"
)

// edges lists a GraphDef as "name(class)<-input,input" lines.
func edges(g *tbpb.GraphDef) []string {
	var out []string
	for _, n := range g.GetNode() {
		out = append(out, n.GetName()+"("+string(n.GetAttr()["keras_class"].GetS())+")<-"+strings.Join(n.GetInput(), ","))
	}
	return out
}

func TestKerasGraph(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string
	}{{
		name: "Keras 3 Sequential",
		config: `{"module": "keras", "class_name": "Sequential", "config": {"name": "seq", "layers": [
			{"class_name": "InputLayer", "config": {"name": "input_layer", "dtype": "float32"}},
			{"class_name": "Dense", "config": {"name": "dense", "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}}}},
			{"class_name": "Dropout", "config": {"name": "dropout"}},
			{"class_name": "Dense", "config": {"name": "dense_1"}}]}}`,
		want: []string{"seq/input_layer(InputLayer)<-", "seq/dense(Dense)<-seq/input_layer", "seq/dropout(Dropout)<-seq/dense", "seq/dense_1(Dense)<-seq/dropout"},
	}, {
		name: "Keras 2 functional with two inputs",
		config: `{"class_name": "Functional", "config": {"name": "model", "layers": [
			{"class_name": "InputLayer", "name": "a", "config": {"name": "a", "dtype": "int64"}, "inbound_nodes": []},
			{"class_name": "InputLayer", "name": "b", "config": {"name": "b"}, "inbound_nodes": []},
			{"class_name": "Concatenate", "name": "cat", "config": {"name": "cat"}, "inbound_nodes": [[["a", 0, 0, {}], ["b", 0, 0, {}]]]},
			{"class_name": "Dense", "name": "out", "config": {"name": "out"}, "inbound_nodes": [[["cat", 0, 0, {}]]]}],
			"input_layers": [["a", 0, 0], ["b", 0, 0]], "output_layers": [["out", 0, 0]]}}`,
		want: []string{"model/a(InputLayer)<-", "model/b(InputLayer)<-", "model/cat(Concatenate)<-model/a,model/b", "model/out(Dense)<-model/cat"},
	}, {
		name: "Keras 3 functional holding a Sequential model",
		config: `{"class_name": "Functional", "config": {"name": "outer", "layers": [
			{"class_name": "InputLayer", "name": "x", "config": {"name": "x"}, "inbound_nodes": []},
			{"class_name": "Sequential", "name": "block", "config": {"name": "block", "layers": [
				{"class_name": "Dense", "config": {"name": "d1"}},
				{"class_name": "ReLU", "config": {"name": "act"}}]},
			 "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}}], "kwargs": {}}]},
			{"class_name": "Add", "name": "add", "config": {"name": "add"},
			 "inbound_nodes": [{"args": [[{"class_name": "__keras_tensor__", "config": {"keras_history": ["block", 1, 0]}},
			                              {"class_name": "__keras_tensor__", "config": {"keras_history": ["x", 0, 0]}}]], "kwargs": {}}]}],
			"input_layers": ["x", 0, 0], "output_layers": ["add", 0, 0]}}`,
		want: []string{"outer/x(InputLayer)<-", "outer/block/d1(Dense)<-outer/x", "outer/block/act(ReLU)<-outer/block/d1", "outer/add(Add)<-outer/block/act,outer/x"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := kerasGraph([]byte(tc.config), true, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if got := edges(g); !slices.Equal(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestKerasDtype(t *testing.T) {
	g, err := kerasGraph([]byte(`{"class_name": "Sequential", "config": {"name": "s", "layers": [
		{"class_name": "Dense", "config": {"name": "a", "dtype": "float32"}},
		{"class_name": "Dense", "config": {"name": "b", "dtype": {"config": {"name": "bfloat16"}}}},
		{"class_name": "Dense", "config": {"name": "c", "dtype": {"config": {"name": "mixed_float16"}}}}]}}`), false, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range g.GetNode() {
		got = append(got, n.GetAttr()["dtype"].GetType().String())
	}
	if want := []string{"DT_FLOAT", "DT_BFLOAT16", "DT_INVALID"}; !slices.Equal(got, want) {
		t.Errorf("dtypes %v, want %v", got, want)
	}
	if _, err := kerasGraph([]byte("not json"), false, DefaultLimits()); err == nil {
		t.Error("a non-JSON config converted")
	}
}

// By default a conceptual graph is TensorBoard's: a Keras 2 model's layers
// get no inputs (TensorBoard reads only Keras 3's inbound nodes); the
// text below is what TensorBoard's keras_util and str() make of it.
// keras2_inputs=true links them (TestKerasGraph).
func TestKerasGraphDefaultIsTensorBoards(t *testing.T) {
	config := `{"class_name": "Functional", "config": {"name": "model", "layers": [
		{"class_name": "InputLayer", "name": "a", "config": {"name": "a", "dtype": "int64"}, "inbound_nodes": []},
		{"class_name": "InputLayer", "name": "b", "config": {"name": "b"}, "inbound_nodes": []},
		{"class_name": "Concatenate", "name": "cat", "config": {"name": "cat"}, "inbound_nodes": [[["a", 0, 0, {}], ["b", 0, 0, {}]]]},
		{"class_name": "Dense", "name": "out", "config": {"name": "out"}, "inbound_nodes": [[["cat", 0, 0, {}]]]}],
		"input_layers": [["a", 0, 0], ["b", 0, 0]], "output_layers": [["out", 0, 0]]}}`
	g, err := kerasGraph([]byte(config), false, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	want := `node {
  name: "model/a"
  attr {
    key: "dtype"
    value {
      type: DT_INT64
    }
  }
  attr {
    key: "keras_class"
    value {
      s: "InputLayer"
    }
  }
}
node {
  name: "model/b"
  attr {
    key: "keras_class"
    value {
      s: "InputLayer"
    }
  }
}
node {
  name: "model/cat"
  attr {
    key: "keras_class"
    value {
      s: "Concatenate"
    }
  }
}
node {
  name: "model/out"
  attr {
    key: "keras_class"
    value {
      s: "Dense"
    }
  }
}
`
	if got := string(pbtxt.Marshal(g)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// A Keras model past the limits is refused as it is converted: nested
// deeper than MaxDepth, a scoped name longer than MaxNameBytes, or names
// and inputs of more than MaxAnswerBytes.
func TestKerasGraphLimits(t *testing.T) {
	nested := `{"class_name": "Dense", "config": {"name": "d"}}`
	for range 5 {
		nested = `{"class_name": "Sequential", "config": {"name": "s", "layers": [` + nested + `]}}`
	}
	lim := DefaultLimits()
	lim.MaxDepth = 4
	if _, err := kerasGraph([]byte(nested), false, lim); err == nil || !strings.Contains(err.Error(), "deeper than 4 levels") {
		t.Errorf("models nested 5 deep with MaxDepth 4: %v", err)
	}
	lim.MaxDepth = 5
	if g, err := kerasGraph([]byte(nested), false, lim); err != nil || len(g.GetNode()) != 1 || g.GetNode()[0].GetName() != "s/s/s/s/s/d" {
		t.Errorf("models nested 5 deep with MaxDepth 5: %v, %v", err, g)
	}
	lim = DefaultLimits()
	lim.MaxNameBytes = len("s/s/s/s/s/d") - 1
	if _, err := kerasGraph([]byte(nested), false, lim); err == nil || !strings.Contains(err.Error(), "longer than 10 bytes") {
		t.Errorf("a name one byte too long: %v", err)
	}
	seq := `{"class_name": "Sequential", "config": {"name": "m", "layers": [` + strings.Repeat(`{"class_name": "Dense", "config": {"name": "abcdefgh"}}, `, 99) +
		`{"class_name": "Dense", "config": {"name": "abcdefgh"}}]}}`
	lim = DefaultLimits()
	lim.MaxAnswerBytes = 1000 // 100 nodes of 10-byte names, most with a 10-byte input
	if _, err := kerasGraph([]byte(seq), false, lim); err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") {
		t.Errorf("names and inputs over MaxAnswerBytes: %v", err)
	}
}
