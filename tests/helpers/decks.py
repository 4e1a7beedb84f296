"""A small community deck as a server would upload it, and its YAML with an edit applied."""

from __future__ import annotations

import re

import yaml

DECK = {
    "id": "upload-basics", "title": "Upload basics",
    "description": "Moving tensors between devices and reading their shape.", "version": 1,
    "mistakes": [
        {"id": "in_place", "title": "Thinking to() works in place",
         "explanation": "to() returns a new tensor; the original stays on its device."},
        {"id": "wrong_attribute", "title": "Wrong attribute",
         "explanation": "A tensor's dimensions are in its shape attribute."}],
    "cards": [
        {"id": "upload-basics/move", "type": "multiple_choice", "rev": 1,
         "difficulty": "easy", "topics": ["devices"], "prompt": 'What does x.to("cuda") return?',
         "options": [
             {"id": "copy", "text": "A new tensor on the GPU", "correct": True},
             {"id": "none", "text": "Nothing at all", "mistake": "in_place",
              "says": "It returns a tensor."},
             {"id": "same", "text": "The very same x object", "mistake": "in_place",
              "says": "x is left as it was."}],
         "hint": "Does the call change x itself?",
         "solution": [{"title": "Read the docs", "detail": "to() returns a tensor."},
                      {"title": "Answer", "detail": "x stays where it was; keep the result."}],
         "takeaway": "Keep the result of to(); it is not in place."},
        {"id": "upload-basics/shape", "type": "fill_in", "rev": 1, "difficulty": "easy",
         "topics": ["devices"], "prompt": "Print the dimensions of the tensor.",
         "code": "print(x.[[attr]])\n",
         "chips": [{"id": "shape", "text": "shape"}, {"id": "device", "text": "device"},
                   {"id": "dtype", "text": "dtype"}],
         "blanks": [{"id": "attr", "answer": "shape", "wrong": {
             "device": {"mistake": "wrong_attribute", "says": "device says where it lives."},
             "dtype": {"mistake": "wrong_attribute", "says": "dtype is the element type."}}}],
         "hint": "Which attribute lists the sizes of each dimension?",
         "explanation": "The shape attribute holds the size of every dimension.",
         "takeaway": "Dimensions live in the shape attribute."}],
}


def deck_yaml(edit=None, deck: dict | None = None) -> bytes:
    data = yaml.safe_load(yaml.safe_dump(deck or DECK, sort_keys=False))  # a deep copy
    if edit:
        edit(data)
    return yaml.safe_dump(data, sort_keys=False).encode()


def renamed(text: str, deck_id: str) -> str:
    """The bundled deck's YAML as the deck `deck_id`: its id and every card id moved."""
    text = re.sub(r"^id: gradient-accumulation$", f"id: {deck_id}", text, count=1, flags=re.M)
    return re.sub(r"(?m)^(\s*-?\s*id: )gradient-accumulation/", rf"\g<1>{deck_id}/", text)
